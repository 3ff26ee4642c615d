#pragma once
// Grid<T>: the planner's dense 2-D tables (rank loads W[rs][l*P + p], peak demands S[rs][j], row
// features H[r][f], sketches phi[k][r], cost matrices) as one row-major block with its shape, so that
// a line reads as its equation: S(rs, j) instead of S[size_t(rs) * size_t(n) + size_t(j)]. Element
// (i, j) sits at data()[i * cols() + j], exactly where the hand-written index put it, so adopting it
// changes no value and no order. Header-only; operator() and row() inline to that one multiply-add,
// with bounds asserted in debug builds only.
#include "core/util/index.h"

#include <cassert>
#include <concepts>
#include <cstddef>
#include <span>
#include <type_traits>
#include <vector>

namespace routepack {

/// A dense rows x cols array of T, row-major (row i is the cols() elements from data() + i * cols()).
/// Indices are any integer type, converted to std::size_t once inside (idx); T is not bool (rows are
/// spans over contiguous storage: use char). A default Grid is 0 x 0. Copies are deep; equality
/// compares the shape and every element.
template <class T> class Grid {
    static_assert(!std::is_same_v<T, bool>, "Grid<bool> has no contiguous rows: use Grid<char>");

public:
    using value_type = T;

    /// An empty grid, 0 x 0.
    Grid() = default;
    /// `rows` x `cols` elements, each `value` (T{} when not given: zero for arithmetic T).
    Grid(std::size_t rows, std::size_t cols, const T& value = T{})
        : rows_(rows), cols_(cols), data_(rows * cols, value) {}

    /// Rows (the first index).
    std::size_t rows() const noexcept { return rows_; }
    /// Columns (the second index; the length of one row).
    std::size_t cols() const noexcept { return cols_; }
    /// Elements, rows() x cols().
    std::size_t size() const noexcept { return data_.size(); }
    /// Whether it holds no element (a dimension is 0).
    bool empty() const noexcept { return data_.empty(); }

    /// Element (i, j), 0 <= i < rows(), 0 <= j < cols() (asserted in debug builds only).
    template <std::integral I, std::integral J> T& operator()(I i, J j) noexcept { return data_[at(i, j)]; }
    /// Element (i, j), read-only.
    template <std::integral I, std::integral J> const T& operator()(I i, J j) const noexcept { return data_[at(i, j)]; }

    /// Row i, 0 <= i < rows(): its cols() elements.
    template <std::integral I> std::span<T> row(I i) noexcept { return {data_.data() + row_start(i), cols_}; }
    /// Row i, read-only.
    template <std::integral I> std::span<const T> row(I i) const noexcept {
        return {data_.data() + row_start(i), cols_};
    }

    /// The rows() x cols() elements, row after row.
    T* data() noexcept { return data_.data(); }
    /// The elements, read-only.
    const T* data() const noexcept { return data_.data(); }
    /// Iteration over every element, row after row (as data() .. data() + size()).
    auto begin() noexcept { return data_.begin(); }
    auto end() noexcept { return data_.end(); }
    auto begin() const noexcept { return data_.begin(); }
    auto end() const noexcept { return data_.end(); }

    /// Reshapes to `rows` x `cols`, every element `value` (like std::vector::assign: the storage is
    /// reused when large enough).
    void assign(std::size_t rows, std::size_t cols, const T& value) {
        rows_ = rows;
        cols_ = cols;
        data_.assign(rows * cols, value);
    }
    /// Sets every element to `value`; the shape stays.
    void fill(const T& value) { data_.assign(data_.size(), value); }

    /// Same shape and equal elements.
    bool operator==(const Grid& other) const = default;

private:
    template <std::integral I, std::integral J> std::size_t at(I i, J j) const noexcept {
        assert(idx(i) < rows_ && idx(j) < cols_);
        return idx(i) * cols_ + idx(j);
    }
    template <std::integral I> std::size_t row_start(I i) const noexcept {
        assert(idx(i) < rows_);
        return idx(i) * cols_;
    }

    std::size_t rows_ = 0, cols_ = 0;
    std::vector<T> data_;
};

} // namespace routepack
