#pragma once
// The ksum umbrella header.
#include <ksum/bsm.hpp>
#include <ksum/datasets.hpp>
#include <ksum/deform.hpp>
#include <ksum/device.hpp>
#include <ksum/direct.hpp>
#include <ksum/error.hpp>
#include <ksum/fgt.hpp>
#include <ksum/fmm2d.hpp>
#include <ksum/global.hpp>
#include <ksum/io.hpp>
#include <ksum/kde.hpp>
#include <ksum/kernels.hpp>
#include <ksum/mesh.hpp>
#include <ksum/pum.hpp>
#include <ksum/reference.hpp>
#include <ksum/table.hpp>
