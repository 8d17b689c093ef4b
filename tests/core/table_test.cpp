// Table<T>::borrow: a view of the caller's memory whose copies own their data (the Python
// bindings pass NumPy arrays this way), and the owning table's copy and move semantics.
#include <ksum/table.hpp>

#include <gtest/gtest.h>

#include <utility>
#include <vector>

namespace {

TEST(Table, BorrowReadsTheCallersMemoryWithoutACopy) {
  std::vector<double> mem{1, 2, 3, 4, 5, 6}; // 3 rows x 2 columns, column by column
  const auto t = ksum::Table<double>::borrow(mem.data(), 3, 2);
  EXPECT_TRUE(t.borrowed());
  EXPECT_EQ(t.data(), mem.data());
  EXPECT_EQ(t(2, 0), 3);
  EXPECT_EQ(t(0, 1), 4);
  EXPECT_EQ(t.col(1)[2], 6);
  mem[4] = 50; // the view sees the caller's changes
  EXPECT_EQ(t(1, 1), 50);
}

TEST(Table, CopyOfAViewOwnsItsData) {
  std::vector<float> mem{1, 2, 3, 4};
  const auto v = ksum::Table<float>::borrow(mem.data(), 2, 2);
  ksum::Table<float> c = v;
  EXPECT_FALSE(c.borrowed());
  EXPECT_NE(c.data(), mem.data());
  mem[0] = 100;
  EXPECT_EQ(c(0, 0), 1); // outlives and ignores the caller's memory
  ksum::Table<float> a(1, 1);
  a = v;
  EXPECT_FALSE(a.borrowed());
  EXPECT_EQ(a(1, 1), 4);
}

TEST(Table, MoveKeepsWhatTheSourceWas) {
  std::vector<double> mem{7, 8};
  auto v = ksum::Table<double>::borrow(mem.data(), 2, 1);
  ksum::Table<double> moved = std::move(v);
  EXPECT_TRUE(moved.borrowed());
  EXPECT_EQ(moved.data(), mem.data());
  EXPECT_EQ(v.rows(), 0);

  ksum::Table<double> owned(3, 2, 1.5);
  owned.names = {"x", "y"};
  const double *p = owned.data();
  ksum::Table<double> m2(std::move(owned));
  EXPECT_FALSE(m2.borrowed());
  EXPECT_EQ(m2.data(), p); // the buffer moved, no copy
  EXPECT_EQ(m2(2, 1), 1.5);
  EXPECT_EQ(m2.names.size(), 2u);
  ksum::Table<double> m3;
  m3 = std::move(m2);
  EXPECT_EQ(m3.data(), p);
  EXPECT_EQ(m2.data(), nullptr);
}

TEST(Table, CopyIsDeepAndSelfAssignmentSafe) {
  ksum::Table<double> a(2, 2, 3.0);
  ksum::Table<double> b = a;
  b(0, 0) = 9;
  EXPECT_EQ(a(0, 0), 3.0);
  const auto &alias = a;
  a = alias;
  EXPECT_EQ(a(1, 1), 3.0);
  EXPECT_EQ(a.cast<float>()(1, 0), 3.0f);
}

} // namespace
