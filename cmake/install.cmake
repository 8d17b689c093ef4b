# Installs the library, headers, the ksum command and a CMake package: find_package(ksum) gives
# the imported target ksum::ksum.
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

install(TARGETS ksum EXPORT ksumTargets
  ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
  LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
  RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
install(DIRECTORY include/ksum DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
if(KSUM_BUILD_APPS)
  install(TARGETS ksum_cli RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
endif()
install(EXPORT ksumTargets NAMESPACE ksum:: DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/ksum)
configure_package_config_file(cmake/ksumConfig.cmake.in
  ${CMAKE_CURRENT_BINARY_DIR}/ksumConfig.cmake
  INSTALL_DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/ksum)
write_basic_package_version_file(${CMAKE_CURRENT_BINARY_DIR}/ksumConfigVersion.cmake
  COMPATIBILITY SameMinorVersion)
install(FILES ${CMAKE_CURRENT_BINARY_DIR}/ksumConfig.cmake
              ${CMAKE_CURRENT_BINARY_DIR}/ksumConfigVersion.cmake
        DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/ksum)
