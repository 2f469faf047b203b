/* DistReshape: the C++17 interface, header-only over the C ABI of distreshape.h.
 *
 *   #include <distreshape.hpp>
 *   distreshape::plan<double> p({10, n, 10}, 1, MPI_COMM_WORLD, len, {10, -1}, 1);
 *   std::vector<double> out(p.output_elems());
 *   p.execute(in, out);                       // collective, any number of times
 *
 * Grid layouts (pencils, bricks, N-d grids) are distreshape::layout values:
 *   distreshape::layout xp({nx, ny, nz}, {py, pz}, {distreshape::not_split, 0, 1});
 *   distreshape::layout yp({nx, ny, nz}, {py, pz}, {0, distreshape::not_split, 1});
 *   distreshape::plan<double> t(xp, yp, MPI_COMM_WORLD);   // t.input_box(), t.output_box()
 *   std::vector<double> y = distreshape::reshape(x, xp, yp, MPI_COMM_WORLD); // one-shot
 *
 * Strided local storage (halos, padding, any axis order), per rank, in elements:
 *   distreshape::plan<double> h(xp, {(ly + 2) * (lz + 2), lz + 2, 1}, yp, {}, MPI_COMM_WORLD);
 *   h.execute(&u[1][1][1], out.data(), out.size());   // the halo interior, never copied
 *   h.execute(in_view, out_view);                     // std::mdspan views, strides checked
 *
 * Fused plans (several plans of one communicator in one round, any element types):
 *   distreshape::fused f(velocity, velocity, velocity, scalar);
 *   f.execute({{u, u_y}, {v, v_y}, {w, w_y}, {t, t_x}});   // one field per plan
 *
 * Split axes are 0-based and shapes are C order, as in the C API. BEWARE when
 * porting NumPy or Heat code: there a split (axis) of -1 means the LAST axis; here
 * -1 (distreshape::not_split, DR_SPLIT_NONE) means NOT SPLIT: every rank holds the
 * whole array. Pass ndims - 1 for the last axis.
 *
 * Every failure throws distreshape::error. The collective calls (the plan
 * constructor, execute, execute_begin, reshape) fail with the same status on every
 * rank, so every rank throws, with one exception inherited from dr_plan_execute: a
 * plan that moves nothing between ranks executes without communicating, and a
 * buffer error of its execute is then thrown only on the rank that made it
 * (reshape has no exception).
 *
 * Link DistReshape::distreshape_cxx (CMake) or define OMPI_SKIP_MPICXX and
 * MPICH_SKIP_MPICXX yourself: the header uses MPI's C API only. */

#ifndef DISTRESHAPE_HPP
#define DISTRESHAPE_HPP

#if __cplusplus < 201703L
#error "distreshape.hpp needs C++17 or later (CMake: link DistReshape::distreshape_cxx)"
#endif

#include <distreshape.h>

#include <algorithm>
#include <array>
#include <complex>
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <iterator>
#include <limits>
#include <memory>
#include <new>
#include <stdexcept>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>
#if __has_include(<version>)
#include <version>
#endif
#ifdef __cpp_lib_span
#include <span>
#endif
#ifdef __cpp_lib_mdspan
#include <mdspan>
#endif

/// The C++ interface of DistReshape (header-only, over the C ABI).
namespace distreshape {

/// The `split` / `new_split` value meaning NOT split (every rank holds the whole
/// array): -1, equal to `DR_SPLIT_NONE`. Unlike NumPy and Heat, where an axis of
/// -1 is the last axis: pass `ndims - 1` for the last axis.
inline constexpr std::int32_t not_split = DR_SPLIT_NONE;

/// The `new_local_len` value asking for the balanced output distribution (for
/// extent `n` over `p` ranks, rank `r` gets `n/p + (r < n%p)` rows).
inline constexpr std::int64_t balanced = -1;

/// What every failing call throws: the `dr_status` (the same on every rank of a
/// collective call) and, as `what()`, the library's message (`dr_last_error_message`),
/// which begins with the kind of error and names the argument, its value and the
/// rank that found it.
class error : public std::runtime_error {
public:
    /// An error of `status` with `message`.
    error(dr_status status, const std::string& message)
        : std::runtime_error(message), status_(status)
    {
    }

    /// The status the C API returned.
    dr_status status() const noexcept { return status_; }

private:
    dr_status status_;
};

/// A global shape argument: at most `DR_MAX_DIMS` extents, copied, so that a braced
/// list (`{10, -1}`) is as safe as a named vector. Implicitly made from a
/// `std::vector<std::int64_t>`, a `std::array<std::int64_t, N>` or a braced list.
class shape {
public:
    /// No dimensions.
    shape() noexcept = default;

    /// The extents of a braced list, e.g. `{10, n, 10}`.
    shape(std::initializer_list<std::int64_t> extents) noexcept
        : shape(extents.begin(), extents.size())
    {
    }

    /// The extents of a vector.
    shape(const std::vector<std::int64_t>& extents) noexcept
        : shape(extents.data(), extents.size())
    {
    }

    /// The extents of an array.
    template <std::size_t N>
    shape(const std::array<std::int64_t, N>& extents) noexcept : shape(extents.data(), N)
    {
    }

    /// The first extent (only the first `DR_MAX_DIMS` are kept).
    const std::int64_t* data() const noexcept { return extents_.data(); }

    /// The number of dimensions as given, even beyond `DR_MAX_DIMS`: the library
    /// rejects such a shape (`DR_ERROR_INVALID_SHAPE`) without reading its extents.
    std::size_t size() const noexcept { return size_; }

private:
    shape(const std::int64_t* extents, std::size_t n) noexcept : size_(n)
    {
        std::copy_n(extents, std::min(n, extents_.size()), extents_.begin());
    }

    std::array<std::int64_t, DR_MAX_DIMS> extents_{};
    std::size_t size_ = 0;
};

namespace detail {

inline void check(dr_status status)
{
    if (status != DR_SUCCESS)
        throw error(status, dr_last_error_message());
}

/// A count as the C API's int32 or int64, saturated: the library then rejects
/// what is out of its range instead of seeing a wrapped value.
template <class Int>
Int saturate(std::size_t n) noexcept
{
    return static_cast<Int>(std::min<std::size_t>(n, std::numeric_limits<Int>::max()));
}

template <class T>
inline constexpr bool is_character_v =
    std::is_same_v<T, char> || std::is_same_v<T, wchar_t> || std::is_same_v<T, char16_t> ||
#ifdef __cpp_char8_t
    std::is_same_v<T, char8_t> ||
#endif
    std::is_same_v<T, char32_t>;

/// The dtype of a signed or unsigned integer of `size` bytes, -1 for none.
constexpr int integer_dtype(std::size_t size, bool is_signed) noexcept
{
    const int first = is_signed ? DR_DTYPE_INT8 : DR_DTYPE_UINT8;
    switch (size) {
    case 1: return first;
    case 2: return first + 1;
    case 4: return first + 2;
    case 8: return first + 3;
    default: return -1;
    }
}

/// The `dr_dtype` value of T, -1 when T is not an element type. Integers go by size
/// and signedness, so that `long long` works wherever `std::int64_t` is `long`.
template <class T>
constexpr int dtype_code() noexcept
{
    if constexpr (!std::is_same_v<T, std::remove_cv_t<T>>)
        return -1;
    else if constexpr (std::is_same_v<T, bool>)
        return DR_DTYPE_BOOL;
    else if constexpr (std::is_same_v<T, float>)
        return DR_DTYPE_FLOAT32;
    else if constexpr (std::is_same_v<T, double>)
        return DR_DTYPE_FLOAT64;
    else if constexpr (std::is_same_v<T, std::complex<float>>)
        return DR_DTYPE_COMPLEX64;
    else if constexpr (std::is_same_v<T, std::complex<double>>)
        return DR_DTYPE_COMPLEX128;
    else if constexpr (std::is_integral_v<T> && !is_character_v<T>)
        return integer_dtype(sizeof(T), std::is_signed_v<T>);
    else
        return -1;
}

/// Pointer overloads take the input's length on trust, as the C API does.
inline constexpr std::size_t unchecked = std::numeric_limits<std::size_t>::max();

/// `v.data()`, refusing `std::vector<bool>` with a clear message.
template <class Vector>
auto vector_data(Vector& v)
{
    using T = typename Vector::value_type;
    static_assert(!std::is_same_v<T, bool>,
                  "distreshape: std::vector<bool> packs bits and has no bool array to pass: use "
                  "plan<bool> with a bool array (std::unique_ptr<bool[]>, std::array, or "
                  "std::span<bool> in C++20); for the same reason distreshape::reshape, which "
                  "returns a std::vector, is not available for bool");
    if constexpr (std::is_same_v<T, bool>)
        return static_cast<bool*>(nullptr); // unreachable: only silences follow-up errors
    else
        return v.data();
}

/// A field's first element as a batch passes it: `vector_data` for a vector,
/// `data()` for a span (which may hold bool).
template <class U, class Alloc>
U* field_data(std::vector<U, Alloc>& v)
{
    return vector_data(v);
}

/// A field's first element (see above), read-only.
template <class U, class Alloc>
const U* field_data(const std::vector<U, Alloc>& v)
{
    return vector_data(v);
}

#ifdef __cpp_lib_span
/// A field's first element (see above), of a span.
template <class U, std::size_t N>
U* field_data(std::span<U, N> s) noexcept
{
    return s.data();
}
#endif

/// An error this rank found before a collective call, which the call agrees on
/// with every rank: `DR_SUCCESS` for none.
struct finding {
    /// The status to agree on.
    dr_status status = DR_SUCCESS;
    /// What was found (the library adds the rank).
    std::string message;
};

} // namespace detail

/// True for the element types DistReshape moves: `bool`, `float`, `double`,
/// `std::complex<float>`, `std::complex<double>`, and the signed and unsigned
/// integers of 1, 2, 4 and 8 bytes (`std::int8_t` ... `std::uint64_t`, also
/// `long long` and the like; not the character types).
template <class T>
inline constexpr bool is_element_v = detail::dtype_code<T>() >= 0;

/// The `dr_dtype` of element type T; a compile error for other types.
template <class T>
constexpr dr_dtype dtype_of() noexcept
{
    static_assert(is_element_v<T>,
                  "distreshape: unsupported element type: use bool, float, double, "
                  "std::complex<float>, std::complex<double>, or std::int8_t ... std::int64_t, "
                  "std::uint8_t ... std::uint64_t (not char types, long double, or structs)");
    // The fallback 0 only keeps a failed static_assert the only error.
    return static_cast<dr_dtype>(is_element_v<T> ? detail::dtype_code<T>() : 0);
}

/// One rank's slab of a split axis: rows `[offset, offset + len)` (both -1 from a
/// plan's query when the array is not split).
struct slab {
    /// Number of rows.
    std::int64_t len;
    /// First row (global index along the axis, 0-based).
    std::int64_t offset;
};

namespace detail {

/// Frees a `dr_options` (`dr_options_free`).
struct options_deleter {
    void operator()(dr_options* o) const noexcept { dr_options_free(&o); }
};

/// An owned `dr_options`.
using options_handle = std::unique_ptr<dr_options, options_deleter>;

} // namespace detail

/// The options of a plan (`dr_options`, every `dr_option`), for `plan`'s
/// constructor: every field left at -1 takes the library's default (see
/// `dr_option` in distreshape.h for each one's meaning and range). A field out of
/// its range throws `DR_ERROR_INVALID_OPTION` on every rank from the constructor.
struct options {
    /// Most bytes in one MPI message (default 2^31 - 1).
    std::int64_t max_message_bytes = -1;
    /// The message slots for packed messages, per direction, over all peers (default 16 MiB).
    std::int64_t slot_bytes = -1;
    /// Most runs cut into one round's messages, and segments a plan lists (default 262144).
    std::int64_t run_budget = -1;
    /// Peers per window on the exchange path (default 64).
    std::int64_t window = -1;
    /// Most bytes in place on the exchange path stages on a rank (default: the
    /// larger of 64 MiB and a tenth of the rank's buffer, less a 64th of that left
    /// to MPI's own buffers).
    std::int64_t in_place_budget = -1;
    /// Switch (1 on, 0 off, -1 the default: the variable `DISTRESHAPE_STRIDED_SENDS`
    /// when set to 1 or 0, else on under Open MPI): long runs at a stride may
    /// travel through strided datatypes on both sides.
    std::int64_t strided_sends = -1;
    /// Switch (`DISTRESHAPE_STRIDED_SLOTS`, else on unless Open MPI on a crowded
    /// node): long runs at a stride travel through the message slots.
    std::int64_t strided_slots = -1;
    /// Switch (`DISTRESHAPE_RUN_MESSAGES`, else on under MPICH): every long run at
    /// a stride is a message of its own.
    std::int64_t run_messages = -1;
    /// Switch (`DISTRESHAPE_DIRECT_READS`, else on a node with more than two ranks
    /// per processor): the ranks of a node read one another's long runs directly.
    std::int64_t direct_reads = -1;
    /// Switch (`DISTRESHAPE_SLEEPING_WAITS`, else on under MPICH): the plan's waits
    /// on an oversubscribed node sleep between polls after a while.
    std::int64_t sleeping_waits = -1;

    /// The C struct of the first five options (`dr_plan_options`, which cannot
    /// hold the switches).
    dr_plan_options native() const noexcept
    {
        return dr_plan_options{max_message_bytes, slot_bytes, run_budget, window,
                               in_place_budget};
    }

    /// The C options of every field (`dr_options`). A value out of range is kept
    /// by the library and thrown by the plan's constructor on every rank.
    detail::options_handle configured() const
    {
        dr_options* made = nullptr;
        detail::check(dr_options_create(&made));
        detail::options_handle owned(made);
        const std::pair<dr_option, std::int64_t> fields[] = {
            {DR_OPTION_MAX_MESSAGE_BYTES, max_message_bytes},
            {DR_OPTION_SLOT_BYTES, slot_bytes},
            {DR_OPTION_RUN_BUDGET, run_budget},
            {DR_OPTION_WINDOW, window},
            {DR_OPTION_IN_PLACE_BUDGET, in_place_budget},
            {DR_OPTION_STRIDED_SENDS, strided_sends},
            {DR_OPTION_STRIDED_SLOTS, strided_slots},
            {DR_OPTION_RUN_MESSAGES, run_messages},
            {DR_OPTION_DIRECT_READS, direct_reads},
            {DR_OPTION_SLEEPING_WAITS, sleeping_waits},
        };
        // A refusal is not thrown here (on this rank alone): the plan agrees on it.
        for (const auto& [option, value] : fields)
            (void)dr_options_set(made, option, value);
        return owned;
    }
};

/// The balanced slab of `extent` rows for `rank` of `nranks` (`dr_balanced_slab`,
/// pure, no MPI): `len = extent/nranks + (rank < extent%nranks)`. Throws
/// `distreshape::error` for a negative extent or a rank outside `[0, nranks)`.
[[nodiscard]] inline slab balanced_slab(std::int64_t extent, std::int32_t nranks,
                                       std::int32_t rank)
{
    slab s{};
    detail::check(dr_balanced_slab(extent, nranks, rank, &s.len, &s.offset));
    return s;
}

/// This rank's block of an array (`dr_plan_input_box`, `dr_plan_output_box`): per
/// axis (C order), the global index of its first element and its extent. The
/// rank's buffer holds the box in C order.
struct box {
    /// The global index of the box's first element along each axis.
    std::vector<std::int64_t> offsets;
    /// The box's extent along each axis.
    std::vector<std::int64_t> extents;

    /// The number of elements of the box (the product of its extents).
    [[nodiscard]] std::size_t elems() const noexcept
    {
        std::size_t n = 1;
        for (std::int64_t e : extents) n *= static_cast<std::size_t>(e);
        return n;
    }

    /// Boxes are equal when their offsets and extents are.
    friend bool operator==(const box& a, const box& b)
    {
        return a.offsets == b.offsets && a.extents == b.extents;
    }

    /// Negation of `==`.
    friend bool operator!=(const box& a, const box& b) { return !(a == b); }
};

/// The local storage of one side of a plan (`dr_plan_create_strided`): one stride
/// per axis of that side's box, in elements, this rank's own (box element
/// `(i0, i1, ...)`, counted from the box's first element, lies at
/// `i0 * s[0] + i1 * s[1] + ...` from it); or none (`{}`), C order without gaps.
/// Implicitly made from a braced list, a `std::vector<std::int64_t>` or a
/// `std::array<std::int64_t, N>`, copied, at most `DR_MAX_DIMS` values.
class strides {
public:
    /// None: C order without gaps (NULL in C).
    strides() noexcept = default;

    /// The strides of a braced list, e.g. `{(ny + 2) * (nz + 2), nz + 2, 1}`; an
    /// empty list is none.
    strides(std::initializer_list<std::int64_t> values) noexcept
        : strides(values.begin(), values.size())
    {
    }

    /// The strides of a vector (an empty one is none).
    strides(const std::vector<std::int64_t>& values) noexcept
        : strides(values.data(), values.size())
    {
    }

    /// The strides of an array.
    template <std::size_t N>
    strides(const std::array<std::int64_t, N>& values) noexcept : strides(values.data(), N)
    {
    }

    /// The first stride, NULL when there are none (C order).
    const std::int64_t* data() const noexcept { return size_ == 0 ? nullptr : values_.data(); }

    /// The number of strides as given (0: none).
    std::size_t size() const noexcept { return size_; }

private:
    strides(const std::int64_t* values, std::size_t n) noexcept : size_(n)
    {
        std::copy_n(values, std::min(n, values_.size()), values_.begin());
    }

    std::array<std::int64_t, DR_MAX_DIMS> values_{};
    std::size_t size_ = 0;
};

namespace detail {

/// Owns a `dr_layout*` for the time a plan is made.
struct layout_deleter {
    void operator()(dr_layout* l) const noexcept { dr_layout_destroy(l); }
};
using layout_handle = std::unique_ptr<dr_layout, layout_deleter>;

} // namespace detail

/// A block layout of an array on a process grid (`dr_layout`), as a plain value:
/// copyable, comparable, no MPI and no C handle held (the `dr_layout` is made, and
/// destroyed, when a plan is made from it).
///
/// The array of global shape `gshape` (C order; the shape of an OUTPUT layout may
/// hold one -1, inferred from the input's element count) is laid out on a process
/// grid of dimensions `grid_dims` whose product is the communicator's size (ranks
/// numbered row-major over the grid, as `MPI_Cart_create` without reordering
/// numbers them). Array axis `i` is split over grid axis `axis_grid[i]`, or not
/// split (`not_split`); each grid axis splits at most one array axis, and one that
/// splits none replicates (ranks differing only in that coordinate hold the same
/// block). Blocks are balanced (`n/p + (c < n%p)` rows for grid coordinate `c`, as
/// `balanced_slab`) unless `with_lengths` gives them.
///
///     distreshape::layout xpencils({nx, ny, nz}, {py, pz}, {distreshape::not_split, 0, 1});
///     distreshape::layout ypencils({nx, ny, nz}, {py, pz}, {0, distreshape::not_split, 1});
///     distreshape::plan<double> p(xpencils, ypencils, MPI_COMM_WORLD);
///
/// The constructor and `with_lengths` check locally what `dr_layout_create` and
/// `dr_layout_set_lengths` check (dimension counts, `axis_grid` values, the number
/// of lengths) and throw `distreshape::error` on the calling rank only; everything
/// else (the grid's size, a grid axis used twice, lengths that do not add up,
/// layouts differing between ranks) is checked by the plan, on every rank alike.
class layout {
public:
    /// An empty layout (no dimensions, no grid), only to be assigned to: a plan
    /// made from it throws on every rank.
    layout() = default;

    /// A copy of `other`.
    layout(const layout& other) = default;

    /// Copies `other` into this layout.
    layout& operator=(const layout& other) = default;

    /// Takes `other`'s value, leaving `other` the empty layout.
    layout(layout&& other) noexcept
        : gshape_(std::exchange(other.gshape_, shape())),
          grid_dims_(std::exchange(other.grid_dims_, {})),
          axis_grid_(std::exchange(other.axis_grid_, {})),
          lengths_(std::exchange(other.lengths_, {}))
    {
    }

    /// Takes `other`'s value, leaving `other` the empty layout (a layout moved
    /// into itself keeps its value).
    layout& operator=(layout&& other) noexcept
    {
        if (this != &other) {
            gshape_ = std::exchange(other.gshape_, shape());
            grid_dims_ = std::exchange(other.grid_dims_, {});
            axis_grid_ = std::exchange(other.axis_grid_, {});
            lengths_ = std::exchange(other.lengths_, {});
        }
        return *this;
    }

    /// The layout of an array of global shape `gshape` over the grid `grid_dims`,
    /// array axis `i` split over grid axis `axis_grid[i]` or `not_split`
    /// (`axis_grid` holds one value per dimension of `gshape`). Balanced blocks.
    layout(shape gshape, std::vector<int> grid_dims, std::vector<int> axis_grid)
        : gshape_(gshape), grid_dims_(std::move(grid_dims)), axis_grid_(std::move(axis_grid)),
          lengths_(std::min<std::size_t>(gshape.size(), DR_MAX_DIMS))
    {
        if (axis_grid_.size() != gshape_.size())
            throw error(DR_ERROR_INVALID_SPLIT,
                        "invalid split: axis_grid has " + std::to_string(axis_grid_.size()) +
                            " values but the shape has " + std::to_string(gshape_.size()) +
                            " dimensions");
        (void)native(); // dr_layout_create's own checks, thrown here
    }

    /// Gives the blocks of array axis `axis` explicit lengths, one per coordinate
    /// of the grid axis splitting it (`grid_dims[axis_grid[axis]]` values; zeros
    /// allowed; that they add up to the extent is checked by the plan), replacing
    /// any given before; an empty `lengths` makes the axis balanced again. Mutates
    /// this layout and returns it, for chaining:
    /// `layout(s, g, a).with_lengths(0, {3, 0, 5})`.
    layout& with_lengths(int axis, std::vector<std::int64_t> lengths) &
    {
        if (!lengths.empty()) {
            // Only the count is checked here (the C call reads that many values);
            // the axis and its grid axis by dr_layout_set_lengths itself.
            const std::size_t a = static_cast<std::size_t>(axis);
            if (axis >= 0 && a < axis_grid_.size() && axis_grid_[a] >= 0 &&
                static_cast<std::size_t>(axis_grid_[a]) < grid_dims_.size() &&
                lengths.size() != static_cast<std::size_t>(std::max(grid_dims_[axis_grid_[a]], 0)))
                throw error(DR_ERROR_INVALID_DISTRIBUTION,
                            "invalid distribution: axis " + std::to_string(axis) + " takes " +
                                std::to_string(grid_dims_[axis_grid_[a]]) +
                                " lengths (grid axis " + std::to_string(axis_grid_[a]) +
                                ") but " + std::to_string(lengths.size()) + " were given");
            detail::layout_handle probe = native();
            detail::check(dr_layout_set_lengths(probe.get(), axis, lengths.data()));
        } else if (axis < 0 || static_cast<std::size_t>(axis) >= lengths_.size()) {
            throw error(DR_ERROR_INVALID_SPLIT,
                        "invalid split: axis = " + std::to_string(axis) +
                            " is not an axis of the " + std::to_string(lengths_.size()) +
                            "-d layout");
        }
        lengths_[static_cast<std::size_t>(axis)] = std::move(lengths);
        return *this;
    }

    /// As above, on a temporary: returns the changed layout by value (no dangling
    /// reference from `const layout& l = layout(...).with_lengths(...)`).
    layout with_lengths(int axis, std::vector<std::int64_t> lengths) &&
    {
        with_lengths(axis, std::move(lengths));
        return std::move(*this);
    }

    /// The global shape as given (a -1 kept).
    [[nodiscard]] std::vector<std::int64_t> global_shape() const
    {
        return std::vector<std::int64_t>(gshape_.data(),
                                         gshape_.data() + std::min<std::size_t>(
                                                              gshape_.size(), DR_MAX_DIMS));
    }

    /// The number of dimensions of the array.
    [[nodiscard]] std::size_t ndims() const noexcept { return gshape_.size(); }

    /// The process grid's dimensions.
    [[nodiscard]] const std::vector<int>& grid_dims() const noexcept { return grid_dims_; }

    /// For each array axis, the grid axis splitting it, or `not_split`.
    [[nodiscard]] const std::vector<int>& axis_grid() const noexcept { return axis_grid_; }

    /// The explicit block lengths of array axis `axis`, empty when balanced (or
    /// when `axis` is out of range).
    [[nodiscard]] std::vector<std::int64_t> lengths(int axis) const
    {
        if (axis < 0 || static_cast<std::size_t>(axis) >= lengths_.size()) return {};
        return lengths_[static_cast<std::size_t>(axis)];
    }

    /// Layouts are equal when their shapes, grids, axis maps and explicit lengths
    /// are (an axis given its balanced lengths explicitly is not equal to one left
    /// balanced, though both plan the same blocks).
    friend bool operator==(const layout& a, const layout& b)
    {
        return a.global_shape() == b.global_shape() && a.ndims() == b.ndims() &&
               a.grid_dims_ == b.grid_dims_ && a.axis_grid_ == b.axis_grid_ &&
               a.lengths_ == b.lengths_;
    }

    /// Negation of `==`.
    friend bool operator!=(const layout& a, const layout& b) { return !(a == b); }

    /// A new C layout of this value (`dr_layout_create` and `dr_layout_set_lengths`),
    /// owned by the returned handle. Throws `distreshape::error` (locally).
    [[nodiscard]] detail::layout_handle native() const
    {
        dr_layout* made = nullptr;
        const std::int32_t n = detail::saturate<std::int32_t>(gshape_.size());
        // axis_grid_ has gshape_.size() values (the constructor checks it); an
        // empty layout has none.
        detail::check(dr_layout_create(n, gshape_.data(),
                                       detail::saturate<std::int32_t>(grid_dims_.size()),
                                       grid_dims_.data(), axis_grid_.data(), &made));
        detail::layout_handle owned(made);
        for (std::size_t a = 0; a < lengths_.size(); ++a)
            if (!lengths_[a].empty())
                detail::check(
                    dr_layout_set_lengths(made, static_cast<std::int32_t>(a), lengths_[a].data()));
        return owned;
    }

private:
    shape gshape_;
    std::vector<int> grid_dims_;
    std::vector<int> axis_grid_;
    std::vector<std::vector<std::int64_t>> lengths_;
};

/// An execution in flight (`plan<T>::execute_begin`), move-only. `test()` moves it
/// on without waiting; `wait()` completes it; the destructor waits for an execution
/// still in flight (its errors then go unreported: call `wait()` to see them), so
/// the buffers stay in use no longer than the request lives. A request may outlive
/// its plan: destroying the plan completes the execution (`dr_plan_destroy`), and
/// the request is then complete. A temporary plan cannot start one
/// (`plan<T>(...).execute_begin(...)` does not compile): its destructor would
/// complete the execution at once, at the end of the statement.
class request {
public:
    request() = default;
    explicit request(dr_request* handle) noexcept : handle_(handle) {}
    request(request&& other) noexcept : handle_(std::exchange(other.handle_, nullptr)) {}
    request& operator=(request&& other) noexcept
    {
        if (this != &other) {
            finish();
            handle_ = std::exchange(other.handle_, nullptr);
        }
        return *this;
    }
    request(const request&) = delete;
    request& operator=(const request&) = delete;
    ~request() { finish(); }

    /// Moves the execution on without waiting; true once it has completed. Call it
    /// between pieces of computation (MPI progresses mostly inside MPI calls).
    /// Throws `distreshape::error` on a failure while messages flow.
    bool test()
    {
        int done = 0;
        detail::check(dr_request_test(&handle_, &done));
        return done != 0;
    }

    /// Waits for the execution to complete. Throws `distreshape::error`.
    void wait() { detail::check(dr_request_wait(&handle_)); }

    /// True until `wait()`, or a `test()` that returned true, has reported the
    /// execution's end. An execution completed by destroying its plan stays
    /// pending until then (the report then comes at once).
    bool pending() const noexcept { return handle_ != nullptr; }

private:
    void finish() noexcept
    {
        if (handle_ != nullptr) dr_request_wait(&handle_);
    }

    dr_request* handle_ = nullptr;
};

template <class T>
class plan;

namespace detail {
template <class T>
std::vector<T> run_once(plan<T>& p, const T* in, std::size_t in_size);
} // namespace detail

/// A reshape planned on every rank of a communicator, to execute any number of
/// times: a move-only owner of a `dr_plan*` (moved-from and default-constructed
/// plans are empty). T is the element type (`is_element_v<T>`); it is compared
/// across ranks when planning like the C `dtype`.
///
/// As in C, plans on one communicator are created and executed in the same order on
/// every rank, and never from two threads at once (execute is non-const; the
/// queries are const and may run concurrently with each other). Destroy a plan on
/// every rank: destroying the last plan of a communicator the caller has freed
/// frees the library's duplicate of it, which is collective.
template <class T>
class plan {
public:
    /// The element type.
    using element_type = T;

    /// The `dr_dtype` of T.
    static constexpr dr_dtype dtype = dtype_of<T>();

    /// An empty plan (as a moved-from one): every call but the destructor, moves,
    /// `swap`, `native_handle`, `input_elems` (0) and `operator bool` throws
    /// `DR_ERROR_NULL_POINTER` (locally).
    plan() noexcept = default;

    /// Plans a reshape (collective over `comm`, never freed; the first plan on a
    /// communicator duplicates it once for all the plans on it).
    ///
    /// This rank holds rows `[off, off + local_len)` of axis `split` of the array of
    /// global shape `gshape` (C order; offsets follow rank order), or the whole
    /// array when `split` is `not_split` (-1: NOT the last axis; `local_len` is then
    /// ignored). The output has shape `new_gshape` (at most one -1, inferred) and is
    /// split along `new_split` (or `not_split`), in the balanced distribution or,
    /// when `new_local_len` is not `balanced`, with this rank's `new_local_len`
    /// rows (the values of all ranks must add up; ignored when not split).
    /// Throws `distreshape::error` on every rank if any rank's arguments are wrong.
    plan(const shape& gshape, std::int32_t split, MPI_Comm comm, std::int64_t local_len,
         const shape& new_gshape, std::int32_t new_split, std::int64_t new_local_len = balanced)
        : plan(gshape, split, comm, local_len, new_gshape, new_split, new_local_len, options{})
    {
    }

    /// Plans a reshape as above, balanced, with the tuning knobs `opts`.
    plan(const shape& gshape, std::int32_t split, MPI_Comm comm, std::int64_t local_len,
         const shape& new_gshape, std::int32_t new_split, const options& opts)
        : plan(gshape, split, comm, local_len, new_gshape, new_split, balanced, opts)
    {
    }

    /// Plans a reshape as above, with this rank's `new_local_len` output rows and the
    /// options `opts` (`dr_plan_create_configured`).
    plan(const shape& gshape, std::int32_t split, MPI_Comm comm, std::int64_t local_len,
         const shape& new_gshape, std::int32_t new_split, std::int64_t new_local_len,
         const options& opts)
        : plan() // constructed from here on: the destructor frees the plan if a query throws
    {
        in_ndims_ = gshape.size();
        new_ndims_ = new_gshape.size();
        const detail::options_handle knobs = opts.configured();
        detail::check(dr_plan_create_configured(
            dtype, detail::saturate<std::int32_t>(gshape.size()), gshape.data(), split, comm,
            local_len, detail::saturate<std::int32_t>(new_gshape.size()), new_gshape.data(),
            new_split, new_local_len, knobs.get(), &handle_));
        // Kept: every execute from a container checks the input's length against it.
        std::int64_t elems = 0;
        detail::check(dr_plan_input_slab(handle_, nullptr, nullptr, &elems));
        input_elems_ = static_cast<std::size_t>(elems);
    }

    /// Plans the redistribution from the layout `in` to the layout `out`
    /// (collective over `comm`, `dr_plan_create_layouts`): the grids may differ, and
    /// so may the shapes, by NumPy's reshape rules (`out`'s may hold one -1). Every
    /// rank passes the same layouts; a grid whose size is not the communicator's, a
    /// grid axis used twice, lengths that do not add up or layouts that differ
    /// between ranks throw `distreshape::error` on every rank, the message naming
    /// the argument, the value and the rank. The plan then works as a slab plan
    /// (execute, in place, `execute_begin`, the queries); `input_box()` and
    /// `output_box()` give this rank's blocks, `output_shape()` the resolved shape.
    plan(const layout& in, const layout& out, MPI_Comm comm) : plan(in, out, comm, options{}) {}

    /// Plans as above with the options `opts`
    /// (`dr_plan_create_layouts_configured`).
    plan(const layout& in, const layout& out, MPI_Comm comm, const options& opts)
        : plan(in, ::distreshape::strides(), out, ::distreshape::strides(), comm, opts)
    {
    }

    /// Plans the redistribution from the layout `in` to the layout `out` with this
    /// rank's local storage on each side (collective over `comm`,
    /// `dr_plan_create_strided_counted`): `in_strides` and `out_strides` are
    /// none (`{}`, C order without gaps) or one stride per axis of the side's box
    /// (of `out`'s resolved shape), in elements, each rank its own. They express
    /// halos and padding (the padded array's strides; pass the first interior
    /// element to `execute`), any axis order and any positive strides. Elements
    /// outside the boxes are never written nor used (a direct read between
    /// ranks of a node may copy a short gap along with the rows around it and
    /// drop it: see the storage page), and the input is never written. Strides that are not positive along an axis longer than 1, or put
    /// two elements at one address, or whose count is not the side's axis count,
    /// throw `distreshape::error` with `DR_ERROR_INVALID_STRIDES` on every rank
    /// (`dr_plan_create_strided_counted`), the message naming the side and the
    /// rank. Executions take pointers to each box's
    /// first element and a capacity of at least the output span (`spans()`); in
    /// place throws `DR_ERROR_INVALID_STRIDES`.
    plan(const layout& in, const ::distreshape::strides& in_strides, const layout& out,
         const ::distreshape::strides& out_strides, MPI_Comm comm, const options& opts = options{})
        : plan()
    {
        // A layout whose C twin cannot be made (only an empty one: the constructor
        // checked the others) goes as NULL, which the library rejects on every rank.
        auto made = [](const layout& l) {
            try {
                return l.native();
            } catch (const error&) {
                return detail::layout_handle();
            }
        };
        const detail::layout_handle in_handle = made(in), out_handle = made(out);
        in_ndims_ = in.ndims();
        new_ndims_ = out.ndims();
        const detail::options_handle knobs = opts.configured();
        const auto count = [](const ::distreshape::strides& given) {
            return static_cast<std::int64_t>(given.size());
        };
        detail::check(dr_plan_create_strided_counted(dtype, in_handle.get(), in_strides.data(), count(in_strides),
                                                     out_handle.get(), out_strides.data(), count(out_strides),
                                                     comm, knobs.get(), &handle_));
        std::int64_t elems = 0;
        detail::check(dr_plan_input_slab(handle_, nullptr, nullptr, &elems));
        input_elems_ = static_cast<std::size_t>(elems);
    }

    /// Takes `other`'s plan; `other` is left empty.
    plan(plan&& other) noexcept
        : handle_(std::exchange(other.handle_, nullptr)),
          input_elems_(std::exchange(other.input_elems_, 0)),
          in_ndims_(std::exchange(other.in_ndims_, 0)),
          new_ndims_(std::exchange(other.new_ndims_, 0))
    {
    }

    /// Destroys this plan (on every rank, see the class) and takes `other`'s.
    plan& operator=(plan&& other) noexcept
    {
        plan(std::move(other)).swap(*this);
        return *this;
    }

    plan(const plan&) = delete;
    plan& operator=(const plan&) = delete;

    /// `dr_plan_destroy` (on every rank, see the class).
    ~plan() { dr_plan_destroy(handle_); }

    /// Exchanges two plans.
    void swap(plan& other) noexcept
    {
        std::swap(handle_, other.handle_);
        std::swap(input_elems_, other.input_elems_);
        std::swap(in_ndims_, other.in_ndims_);
        std::swap(new_ndims_, other.new_ndims_);
    }

    /// Exchanges two plans.
    friend void swap(plan& a, plan& b) noexcept { a.swap(b); }

    /// Whether the plan is not empty.
    explicit operator bool() const noexcept { return handle_ != nullptr; }

    /// The C plan, still owned by this object (for the C API's functions).
    dr_plan* native_handle() const noexcept { return handle_; }

    /// The number of elements of this rank's input (its slab).
    [[nodiscard]] std::size_t input_elems() const noexcept { return input_elems_; }

    /// This rank's input rows along `split` and the first one's global index,
    /// both -1 when the input is not split.
    [[nodiscard]] slab input_slab() const
    {
        slab s{};
        detail::check(dr_plan_input_slab(handle_, &s.len, &s.offset, nullptr));
        return s;
    }

    /// This rank's output rows along `new_split` and the first one's global index
    /// (with explicit target lengths, the sum of the lower ranks'), both -1 when
    /// the output is not split.
    [[nodiscard]] slab output_slab() const
    {
        slab s{};
        detail::check(dr_plan_output_slab(handle_, &s.len, &s.offset, nullptr));
        return s;
    }

    /// This rank's input box (`dr_plan_input_box`): for a layout plan its block,
    /// for a slab plan its slab (whole along every axis but the split one).
    [[nodiscard]] box input_box() const
    {
        box b{std::vector<std::int64_t>(in_ndims_), std::vector<std::int64_t>(in_ndims_)};
        detail::check(dr_plan_input_box(handle_, b.offsets.data(), b.extents.data()));
        return b;
    }

    /// This rank's output box in the resolved output shape (`dr_plan_output_box`).
    [[nodiscard]] box output_box() const
    {
        box b{std::vector<std::int64_t>(new_ndims_), std::vector<std::int64_t>(new_ndims_)};
        detail::check(dr_plan_output_box(handle_, b.offsets.data(), b.extents.data()));
        return b;
    }

    /// The resolved output global shape (the -1 inferred).
    [[nodiscard]] std::vector<std::int64_t> output_shape() const
    {
        std::vector<std::int64_t> resolved(new_ndims_);
        detail::check(dr_plan_output(handle_, resolved.data(), nullptr, nullptr));
        return resolved;
    }

    /// This rank's rows along the new split axis, -1 when the output is not split.
    [[nodiscard]] std::int64_t output_len() const
    {
        std::int64_t len = 0;
        detail::check(dr_plan_output(handle_, nullptr, &len, nullptr));
        return len;
    }

    /// The number of elements of this rank's output: the capacity execute needs out
    /// of place (in place: the larger of this and `input_elems()`).
    [[nodiscard]] std::size_t output_elems() const
    {
        std::int64_t elems = 0;
        detail::check(dr_plan_output(handle_, nullptr, nullptr, &elems));
        return static_cast<std::size_t>(elems);
    }

    /// This rank's spans (`dr_plan_spans`), input then output: the elements from
    /// each box's first element to one past its last, what the input must hold
    /// and the least output capacity (a box's size without strides, 0 when empty).
    [[nodiscard]] std::pair<std::size_t, std::size_t> spans() const
    {
        std::int64_t in = 0, out = 0;
        detail::check(dr_plan_spans(handle_, &in, &out));
        return {static_cast<std::size_t>(in), static_cast<std::size_t>(out)};
    }

    /// This rank's strides in elements (`dr_plan_strides`), input then output, one
    /// per axis of each side's box: those the plan was made with, or C order
    /// without gaps.
    [[nodiscard]] std::pair<std::vector<std::int64_t>, std::vector<std::int64_t>> strides() const
    {
        std::pair<std::vector<std::int64_t>, std::vector<std::int64_t>> s(in_ndims_, new_ndims_);
        detail::check(dr_plan_strides(handle_, s.first.data(), s.second.data()));
        return s;
    }

    /// What the plan does on this rank: path, bytes sent, received and copied, peers.
    [[nodiscard]] dr_plan_stats stats() const
    {
        dr_plan_stats s{};
        detail::check(dr_plan_stats_get(handle_, &s));
        return s;
    }

    /// A human-readable description of what the plan does on this rank, whole.
    [[nodiscard]] std::string describe() const
    {
        std::size_t needed = 0;
        detail::check(dr_plan_describe(handle_, nullptr, 0, &needed));
        std::string text(needed, '\0');
        // needed + 1 bytes: the NUL lands on the terminator std::string keeps anyway.
        detail::check(dr_plan_describe(handle_, text.data(), needed + 1, nullptr));
        return text;
    }

    /// Executes the plan (collective, unless the plan moves nothing between ranks):
    /// reads `input_elems()` elements from `in` (not checked: the caller's duty, as
    /// in C) and writes `output_elems()` to `out`, which holds `capacity` elements.
    /// `out == in` is in place. Throws `distreshape::error`.
    void execute(const T* in, T* out, std::size_t capacity)
    {
        run(in, detail::unchecked, out, capacity);
    }

    /// Executes the plan (as above) from `in`, which holds `in_size` elements
    /// (`dr_plan_execute_sized`): an input shorter than `input_elems()` fails with
    /// `DR_ERROR_BUFFER_TOO_SMALL` on every rank (unless the plan moves nothing
    /// between ranks), the message naming the short rank; nothing is read.
    void execute(const T* in, std::size_t in_size, T* out, std::size_t capacity)
    {
        run(in, in_size, out, capacity);
    }

    /// Executes the plan (as above) from `in` into `out`, whose size is the capacity
    /// (size it with `output_elems()`; elements beyond are untouched). An `in`
    /// shorter than `input_elems()` fails with `DR_ERROR_BUFFER_TOO_SMALL`, as in
    /// the overload with `in_size`. Any allocators. Not for `bool`
    /// (`std::vector<bool>` is not contiguous).
    template <class InAlloc, class OutAlloc>
    void execute(const std::vector<T, InAlloc>& in, std::vector<T, OutAlloc>& out)
    {
        run(detail::vector_data(in), in.size(), detail::vector_data(out), out.size());
    }

    /// Executes the plan in place: `buf` holds this rank's input on entry and its
    /// output on return, so `capacity` must cover both (`max(input_elems(),
    /// output_elems())`). When nothing moves on this rank, nothing is touched.
    void execute_in_place(T* buf, std::size_t capacity)
    {
        run(buf, detail::unchecked, buf, capacity);
    }

    /// Executes the plan in place on `buf` (its size is the capacity). Not for bool.
    template <class Alloc>
    void execute_in_place(std::vector<T, Alloc>& buf)
    {
        execute_in_place(detail::vector_data(buf), buf.size());
    }

#ifdef __cpp_lib_span
    /// Executes the plan (C++20) from `in` into `out` (its size is the capacity),
    /// checking the length of `in` as the vector overload; for every element type,
    /// bool included.
    void execute(std::span<const T> in, std::span<T> out)
    {
        run(in.data(), in.size(), out.data(), out.size());
    }

    /// Executes the plan in place (C++20) on `buf` (its size is the capacity).
    void execute_in_place(std::span<T> buf) { execute_in_place(buf.data(), buf.size()); }
#endif

#ifdef __cpp_lib_mdspan
    /// Executes the plan (collective, on every plan) from the view `in` into the
    /// view `out`, any strided mappings (`layout_right`, `layout_left`,
    /// `layout_stride`): each view's extents must be this rank's box on its side
    /// and its strides the plan's (`strides()`; any stride along an axis of extent
    /// 1), else `distreshape::error` with `DR_ERROR_INVALID_SHAPE` or
    /// `DR_ERROR_INVALID_STRIDES` on every rank (agreed by
    /// `dr_plan_execute_agreeing`) and nothing moves: never a copy.
    template <class In, class InExtents, class InLayout, class OutExtents, class OutLayout>
    void execute(std::mdspan<In, InExtents, InLayout, std::default_accessor<In>> in,
                 std::mdspan<T, OutExtents, OutLayout, std::default_accessor<T>> out)
    {
        static_assert(std::is_same_v<std::remove_const_t<In>, T>,
                      "the input view's elements must be the plan's");
        static_assert(InLayout::template mapping<InExtents>::is_always_strided() &&
                          OutLayout::template mapping<OutExtents>::is_always_strided(),
                      "views with strided mappings only");
        std::array<std::int64_t, DR_MAX_DIMS> in_box{}, out_box{}, in_strides{}, out_strides{};
        detail::check(dr_plan_input_box(handle_, nullptr, in_box.data()));
        detail::check(dr_plan_output_box(handle_, nullptr, out_box.data()));
        detail::check(dr_plan_strides(handle_, in_strides.data(), out_strides.data()));
        auto [found, message] = view_mismatch("input", in, in_ndims_, in_box, in_strides);
        if (found == DR_SUCCESS)
            std::tie(found, message) = view_mismatch("output", out, new_ndims_, out_box, out_strides);
        const auto [in_span, out_span] = spans();
        run_agreeing(in.data_handle(), in_span, out.data_handle(), out_span, found, message);
    }
#endif

    /// Starts executing the plan without waiting (collective, with the checks and
    /// the agreement of `execute`, whose errors it throws on every rank alike): the
    /// messages are in flight when it returns. Until the request completes, leave
    /// `in` unchanged and `out` unread, and keep both alive; a plan runs one
    /// execution at a time (`DR_ERROR_EXECUTION_IN_PROGRESS` otherwise). `in`
    /// holds `input_elems()` elements (taken on trust, as in C).
    [[nodiscard]] request execute_begin(const T* in, T* out, std::size_t capacity) &
    {
        return begin(in, detail::unchecked, out, capacity);
    }

    /// Starts executing the plan (as above) from `in`, which holds `in_size`
    /// elements, checked as by `execute` (`dr_plan_execute_begin_sized`).
    [[nodiscard]] request execute_begin(const T* in, std::size_t in_size, T* out,
                                        std::size_t capacity) &
    {
        return begin(in, in_size, out, capacity);
    }

    /// Starts executing the plan (as above) from `in` into `out` (its size is the
    /// capacity), the length of `in` checked. Not for bool.
    template <class InAlloc, class OutAlloc>
    [[nodiscard]] request execute_begin(const std::vector<T, InAlloc>& in,
                                        std::vector<T, OutAlloc>& out) &
    {
        return begin(detail::vector_data(in), in.size(), detail::vector_data(out), out.size());
    }

#ifdef __cpp_lib_span
    /// Starts executing the plan (C++20, as above) from `in` into `out` (its size
    /// is the capacity), the length of `in` checked.
    [[nodiscard]] request execute_begin(std::span<const T> in, std::span<T> out) &
    {
        return begin(in.data(), in.size(), out.data(), out.size());
    }
#endif

    /// Not from a temporary input: it would be freed at the end of the statement
    /// while the execution still reads it.
    template <class InAlloc, class OutAlloc>
    request execute_begin(const std::vector<T, InAlloc>&&, std::vector<T, OutAlloc>&) & = delete;
#ifdef __cpp_lib_span
    /// Not from a temporary input (see above), through a span made from it.
    template <class InAlloc>
    request execute_begin(const std::vector<T, InAlloc>&&, std::span<T>) & = delete;
    /// Not from a temporary input (see above), through a span made from it.
    template <std::size_t N>
    request execute_begin(const std::array<T, N>&&, std::span<T>) & = delete;
#endif

    /// Not on a temporary plan: its destructor, at the end of the statement, would
    /// complete the execution there and then (see `request`).
    request execute_begin(const T*, T*, std::size_t) && = delete;
    /// Not on a temporary plan (see above).
    request execute_begin(const T*, std::size_t, T*, std::size_t) && = delete;
    /// Not on a temporary plan (see above).
    template <class InAlloc, class OutAlloc>
    request execute_begin(const std::vector<T, InAlloc>&, std::vector<T, OutAlloc>&) && = delete;
#ifdef __cpp_lib_span
    /// Not on a temporary plan (see above).
    request execute_begin(std::span<const T>, std::span<T>) && = delete;
#endif

    /// Executes the plan on a batch of fields (collective, every rank with as
    /// many: `dr_plan_execute_batch`): field `i` from `in[i]` into `out[i]`, each
    /// as `execute` would, in one exchange whose messages carry every field's
    /// part. `out[i] == in[i]` is that field in place (the fields then run one
    /// after another); `capacity` is each output's. Inputs are taken on trust,
    /// as in C. A count that differs between ranks, `in` and `out` of different
    /// sizes, no fields, or fields sharing memory throw `distreshape::error` on
    /// every rank alike (even on a plan that moves nothing between ranks).
    void execute_batch(const std::vector<const T*>& in, const std::vector<T*>& out,
                       std::size_t capacity)
    {
        run_batch(in, detail::unchecked, out, capacity, counted(in.size(), out.size()), nullptr);
    }

    /// Executes the plan on a batch (as above) from the containers `in` into
    /// `out`, every field's size checked as `execute`'s vector overload checks
    /// it: an input shorter than this rank's input, or an output shorter than
    /// its output, throws `DR_ERROR_BUFFER_TOO_SMALL` on every rank, the message
    /// naming the field and the rank; nothing moves. Not for bool.
    template <class InAlloc, class OutAlloc>
    void execute_batch(const std::vector<std::vector<T, InAlloc>>& in,
                       std::vector<std::vector<T, OutAlloc>>& out)
    {
        run_fields(in, out, nullptr);
    }

#ifdef __cpp_lib_span
    /// Executes the plan on a batch (C++20, as above) from the spans `in` into
    /// `out`, every field's size checked; for every element type, bool included.
    void execute_batch(std::span<const std::span<const T>> in, std::span<const std::span<T>> out)
    {
        run_fields(in, out, nullptr);
    }
#endif

    /// Executes the plan in place on a batch (collective, as `execute_batch`):
    /// `buffers[i]` holds field `i`'s input on entry and its output on return,
    /// `capacity` elements each (the larger of `input_elems()` and
    /// `output_elems()`). The fields run one after another.
    void execute_batch_in_place(const std::vector<T*>& buffers, std::size_t capacity)
    {
        const std::vector<const T*> in(buffers.begin(), buffers.end());
        execute_batch(in, buffers, capacity);
    }

    /// Starts executing the plan on a batch without waiting (collective, with the
    /// checks and the agreement of `execute_batch`, whose errors it throws on every
    /// rank alike, `dr_plan_execute_batch_begin`): the messages of every field are
    /// in flight when it returns. The vectors of pointers may go once it returns;
    /// the fields' buffers stay untouched and alive until the request completes.
    /// A batch with a field in place completes here.
    [[nodiscard]] request execute_batch_begin(const std::vector<const T*>& in,
                                              const std::vector<T*>& out,
                                              std::size_t capacity) &
    {
        dr_request* handle = nullptr;
        run_batch(in, detail::unchecked, out, capacity, counted(in.size(), out.size()), &handle);
        return request(handle);
    }

    /// Starts executing the plan on a batch (as above) from the containers `in`
    /// into `out`, every field's size checked. Not for bool.
    template <class InAlloc, class OutAlloc>
    [[nodiscard]] request execute_batch_begin(const std::vector<std::vector<T, InAlloc>>& in,
                                              std::vector<std::vector<T, OutAlloc>>& out) &
    {
        dr_request* handle = nullptr;
        run_fields(in, out, &handle);
        return request(handle);
    }

#ifdef __cpp_lib_span
    /// Starts executing the plan on a batch (C++20, as above) from the spans `in`
    /// into `out`, every field's size checked.
    [[nodiscard]] request execute_batch_begin(std::span<const std::span<const T>> in,
                                              std::span<const std::span<T>> out) &
    {
        dr_request* handle = nullptr;
        run_fields(in, out, &handle);
        return request(handle);
    }
#endif

    /// Not from temporary inputs (see `execute_begin`).
    template <class InAlloc, class OutAlloc>
    request execute_batch_begin(const std::vector<std::vector<T, InAlloc>>&&,
                                std::vector<std::vector<T, OutAlloc>>&) & = delete;

    /// Not on a temporary plan (see `execute_begin`).
    request execute_batch_begin(const std::vector<const T*>&, const std::vector<T*>&,
                                std::size_t) && = delete;
    /// Not on a temporary plan (see `execute_begin`).
    template <class InAlloc, class OutAlloc>
    request execute_batch_begin(const std::vector<std::vector<T, InAlloc>>&,
                                std::vector<std::vector<T, OutAlloc>>&) && = delete;
#ifdef __cpp_lib_span
    /// Not on a temporary plan (see `execute_begin`).
    request execute_batch_begin(std::span<const std::span<const T>>,
                                std::span<const std::span<T>>) && = delete;
#endif

private:
#ifdef __cpp_lib_mdspan
    /// Why `view` is not this rank's box of `ndims` extents `box` at `strides` on
    /// the `side`: the status and the message (`DR_SUCCESS` when it is).
    template <class View>
    static std::pair<dr_status, std::string> view_mismatch(const char* side, const View& view, std::size_t ndims,
                                     const std::array<std::int64_t, DR_MAX_DIMS>& box,
                                     const std::array<std::int64_t, DR_MAX_DIMS>& strides)
    {
        const std::size_t rank = View::rank();
        bool same = rank == ndims, empty = false;
        for (std::size_t k = 0; same && k < rank; ++k) {
            same = static_cast<std::int64_t>(view.extent(k)) == box[k];
            empty = empty || box[k] == 0;
        }
        if (!same)
            return {DR_ERROR_INVALID_SHAPE, std::string("the ") + side +
                                                " view's extents are not this rank's " + side +
                                                " box"};
        for (std::size_t k = 0; !empty && k < rank; ++k)
            if (box[k] > 1 && static_cast<std::int64_t>(view.stride(k)) != strides[k])
                return {DR_ERROR_INVALID_STRIDES,
                        std::string("the ") + side + " view's stride " +
                            std::to_string(view.stride(k)) + " along axis " + std::to_string(k) +
                            " differs from the plan's " + std::to_string(strides[k])};
        return {DR_SUCCESS, std::string()};
    }
#endif

    /// dr_plan_execute_sized with an input of `in_size` elements, dr_plan_execute
    /// when unchecked (a pointer's input taken on trust).
    void run(const T* in, std::size_t in_size, T* out, std::size_t capacity)
    {
        const std::int64_t cap = detail::saturate<std::int64_t>(capacity);
        if (in_size == detail::unchecked)
            detail::check(dr_plan_execute(handle_, in, out, cap));
        else
            detail::check(dr_plan_execute_sized(handle_, in, detail::saturate<std::int64_t>(in_size),
                                                out, cap));
    }

    /// dr_plan_execute_begin_sized (dr_plan_execute_begin when unchecked).
    request begin(const T* in, std::size_t in_size, T* out, std::size_t capacity)
    {
        dr_request* handle = nullptr;
        const std::int64_t cap = detail::saturate<std::int64_t>(capacity);
        if (in_size == detail::unchecked)
            detail::check(dr_plan_execute_begin(handle_, in, out, cap, &handle));
        else
            detail::check(dr_plan_execute_begin_sized(
                handle_, in, detail::saturate<std::int64_t>(in_size), out, cap, &handle));
        return request(handle);
    }

    /// `in` and `out` of a batch holding `ins` and `outs` fields: an error unless
    /// they hold as many.
    static detail::finding counted(std::size_t ins, std::size_t outs)
    {
        if (ins == outs) return {};
        return {DR_ERROR_INVALID_SHAPE, "in holds " + std::to_string(ins) +
                                            " fields but out holds " + std::to_string(outs)};
    }

    /// Runs the batch of the pointers `in` and `out` (`in_size` elements each, the
    /// input's span when unchecked; `capacity` each), agreeing `found` with every
    /// rank first (`dr_plan_execute_batch_agreeing`); starts it instead when
    /// `request` is not NULL (`dr_plan_execute_batch_begin_agreeing`).
    void run_batch(const std::vector<const T*>& in, std::size_t in_size,
                   const std::vector<T*>& out, std::size_t capacity, const detail::finding& found,
                   dr_request** request)
    {
        const std::size_t elems = in_size == detail::unchecked ? spans().first : in_size;
        const std::int64_t k = detail::saturate<std::int64_t>(in.size());
        const void* const* ins = reinterpret_cast<const void* const*>(in.data());
        void* const* outs = reinterpret_cast<void* const*>(out.data());
        const std::int64_t in_elems = detail::saturate<std::int64_t>(elems);
        const std::int64_t cap = detail::saturate<std::int64_t>(capacity);
        if (request == nullptr)
            detail::check(dr_plan_execute_batch_agreeing(handle_, k, ins, in_elems, outs, cap,
                                                         found.status, found.message.c_str()));
        else
            detail::check(dr_plan_execute_batch_begin_agreeing(
                handle_, k, ins, in_elems, outs, cap, found.status, found.message.c_str(), request));
    }

    /// Runs (or starts, see `run_batch`) the batch of the containers `in` and
    /// `out`, each field's size checked against this rank's spans.
    template <class Inputs, class Outputs>
    void run_fields(const Inputs& in, Outputs& out, dr_request** request)
    {
        const auto [in_span, out_span] = spans();
        detail::finding found = counted(std::size(in), std::size(out));
        std::vector<const T*> ins;
        std::vector<T*> outs;
        std::size_t in_size = std::numeric_limits<std::size_t>::max(), capacity = in_size;
        auto short_field = [&](std::size_t i, const char* side, std::size_t size, std::size_t span) {
            if (size >= span || found.status != DR_SUCCESS) return;
            found = {DR_ERROR_BUFFER_TOO_SMALL,
                     "field " + std::to_string(i) + ": the " + side + " holds " +
                         std::to_string(size) + " elements but this rank's " + side + " spans " +
                         std::to_string(span)};
        };
        for (const auto& field : in) {
            short_field(ins.size(), "input", std::size(field), in_span);
            in_size = std::min<std::size_t>(in_size, std::size(field));
            ins.push_back(detail::field_data(field));
        }
        for (auto& field : out) {
            short_field(outs.size(), "output", std::size(field), out_span);
            capacity = std::min<std::size_t>(capacity, std::size(field));
            outs.push_back(detail::field_data(field));
        }
        run_batch(ins, ins.empty() ? 0 : in_size, outs, outs.empty() ? 0 : capacity, found,
                  request);
    }

    /// dr_plan_execute_agreeing: executes as `run` does (`in_size` elements, or
    /// `input_elems()` when unchecked), first agreeing with every rank, even where
    /// nothing moves between ranks, on `found` (DR_SUCCESS for none) and `message`.
    void run_agreeing(const T* in, std::size_t in_size, T* out, std::size_t capacity,
                      dr_status found, const std::string& message)
    {
        const std::size_t elems = in_size == detail::unchecked ? input_elems_ : in_size;
        detail::check(dr_plan_execute_agreeing(handle_, in, detail::saturate<std::int64_t>(elems),
                                               out, detail::saturate<std::int64_t>(capacity),
                                               found, message.c_str()));
    }

    friend std::vector<T> detail::run_once<T>(plan<T>& p, const T* in, std::size_t in_size);

    dr_plan* handle_ = nullptr;
    std::size_t input_elems_ = 0;
    std::size_t in_ndims_ = 0;
    std::size_t new_ndims_ = 0;
};

namespace detail {

/// A container's first element as a fused field passes it: `vector_data` for a
/// vector (refusing `std::vector<bool>`), `std::data` for the others.
template <class U, class Alloc>
auto contiguous_data(std::vector<U, Alloc>& v)
{
    return vector_data(v);
}

/// A container's first element (see above), read-only.
template <class U, class Alloc>
auto contiguous_data(const std::vector<U, Alloc>& v)
{
    return vector_data(v);
}

/// A container's first element (see above): an array, a span, a string of
/// elements, anything contiguous with `std::data`.
template <class Container>
auto contiguous_data(Container&& c) -> decltype(std::data(c))
{
    return std::data(c);
}

} // namespace detail

/// One plan of a fused object (`fused`), of any element type: a reference to a
/// `plan<T>`, made implicitly from one, so that plans of different element
/// types go in one list. The plan must outlive the list, not the fused object.
class fused_plan {
public:
    /// The plan `p`.
    template <class T>
    fused_plan(const plan<T>& p) noexcept : handle_(p.native_handle()), dtype_(plan<T>::dtype)
    {
    }

    /// Not a temporary plan: it would be destroyed at the end of the statement,
    /// before the list is used.
    template <class T>
    fused_plan(const plan<T>&&) = delete;

    /// The C plan.
    dr_plan* native_handle() const noexcept { return handle_; }

    /// The plan's element type.
    dr_dtype dtype() const noexcept { return dtype_; }

private:
    dr_plan* handle_;
    dr_dtype dtype_;
};

/// One field of a fused execution (`fused::execute`): its input and its output,
/// of one element type, the fused plan's at its place. Made from two containers
/// (`std::vector`, `std::array`, C++20 `std::span`, anything contiguous with
/// `std::data` and `std::size`; not `std::vector<bool>`), from pointers with
/// their sizes, or in place (`fused_field::in_place`). The sizes are checked by
/// the execution: an input shorter than its plan's input span, or an output
/// shorter than its output span, throws `DR_ERROR_BUFFER_TOO_SMALL` on every
/// rank, the message naming the field.
class fused_field {
public:
    /// The field from `in` into `out`, their sizes the lengths.
    template <class In, class Out,
              class = decltype(detail::contiguous_data(std::declval<Out&>())),
              class = decltype(detail::contiguous_data(std::declval<const In&>()))>
    fused_field(const In& in, Out&& out)
    {
        using T = std::remove_pointer_t<decltype(detail::contiguous_data(out))>;
        using U = std::remove_cv_t<std::remove_pointer_t<decltype(detail::contiguous_data(in))>>;
        static_assert(std::is_same_v<U, T>,
                      "distreshape: a fused field's input and output hold the same element type "
                      "(and the output is not const)");
        *this = fused_field(detail::contiguous_data(in), std::size(in), detail::contiguous_data(out),
                            std::size(out));
    }

    /// The field from `in` (`in_size` elements) into `out` (`capacity` elements).
    template <class T>
    fused_field(const T* in, std::size_t in_size, T* out, std::size_t capacity) noexcept
        : in_(in), in_size_(in_size), out_(out), capacity_(capacity), dtype_(dtype_of<T>())
    {
    }

    /// The field in place in `buffer` (a container, as above): it holds the
    /// field's input on entry and its output on return, so it must hold the
    /// larger of the two spans.
    template <class Buffer>
    static fused_field in_place(Buffer&& buffer)
    {
        auto* data = detail::contiguous_data(buffer);
        using T = std::remove_pointer_t<decltype(data)>;
        static_assert(!std::is_const_v<T>, "distreshape: an in-place buffer is written");
        return fused_field(static_cast<const T*>(data), std::size(buffer), data, std::size(buffer));
    }

    /// The first input element.
    const void* input() const noexcept { return in_; }
    /// The input's size in elements.
    std::size_t input_size() const noexcept { return in_size_; }
    /// The first output element.
    void* output() const noexcept { return out_; }
    /// The output's capacity in elements.
    std::size_t capacity() const noexcept { return capacity_; }
    /// The element type.
    dr_dtype dtype() const noexcept { return dtype_; }

private:
    const void* in_ = nullptr;
    std::size_t in_size_ = 0;
    void* out_ = nullptr;
    std::size_t capacity_ = 0;
    dr_dtype dtype_ = DR_DTYPE_INT8;
};

/// Several plans of one communicator executed together, in one round
/// (`dr_fused_create`): the x -> y transposes of a velocity field's three
/// components and of a scalar with other extents, say, cost one exchange's
/// latency rather than four. Each plan keeps its own runs and messages; what
/// the fused object shares is the framing of the traffic between two ranks
/// (where a pair exchanges little over all the plans, one message carries
/// every plan's part). A move-only owner of a `dr_fused*`; moved-from and
/// default-constructed objects are empty (every call but the destructor,
/// moves, `swap`, `native_handle`, `size` and `operator bool` throws
/// `DR_ERROR_NULL_POINTER`).
///
///     distreshape::fused f(velocity, velocity, velocity, scalar);   // plans of any T
///     f.execute({{u, u_y}, {v, v_y}, {w, w_y}, {t, t_x}});          // containers
///
/// Creation and execution are collective: every rank fuses the same plans in
/// the same order (the same plan may come several times: its fields then move
/// as one batch), all made on one communicator, and errors throw on every rank
/// alike (`DR_ERROR_INVALID_COMMUNICATOR` for plans of two communicators,
/// `DR_ERROR_INCONSISTENT_ARGUMENTS` for other plans or another order). The
/// plans may be destroyed before the fused object: it keeps them until it is
/// destroyed (on every rank, as a plan: `dr_fused_destroy`).
class fused {
public:
    /// An empty fused object (as a moved-from one).
    fused() noexcept = default;

    /// Fuses `plans`, in order (collective, `dr_fused_create`).
    fused(std::initializer_list<fused_plan> plans) : fused(plans.begin(), plans.size()) {}

    /// Fuses `plans`, in order (collective): a list built at run time.
    explicit fused(const std::vector<fused_plan>& plans) : fused(plans.data(), plans.size()) {}

    /// Fuses the plans given, in order (collective), of any element types.
    template <class... T, class = std::enable_if_t<(sizeof...(T) > 0)>>
    explicit fused(const plan<T>&... plans) : fused({fused_plan(plans)...})
    {
    }

    /// Takes `other`'s fused object; `other` is left empty.
    fused(fused&& other) noexcept
        : handle_(std::exchange(other.handle_, nullptr)), dtypes_(std::move(other.dtypes_))
    {
        other.dtypes_.clear();
    }

    /// Destroys this fused object (on every rank) and takes `other`'s.
    fused& operator=(fused&& other) noexcept
    {
        fused(std::move(other)).swap(*this);
        return *this;
    }

    fused(const fused&) = delete;
    fused& operator=(const fused&) = delete;

    /// `dr_fused_destroy` (on every rank, see the class).
    ~fused() { dr_fused_destroy(handle_); }

    /// Exchanges two fused objects.
    void swap(fused& other) noexcept
    {
        std::swap(handle_, other.handle_);
        dtypes_.swap(other.dtypes_);
    }

    /// Exchanges two fused objects.
    friend void swap(fused& a, fused& b) noexcept { a.swap(b); }

    /// Whether the object is not empty.
    explicit operator bool() const noexcept { return handle_ != nullptr; }

    /// The C fused object, still owned by this object.
    dr_fused* native_handle() const noexcept { return handle_; }

    /// How many plans are fused (the fields every execution takes).
    [[nodiscard]] std::size_t size() const noexcept { return dtypes_.size(); }

    /// Executes the fused plans (collective, `dr_fused_execute_agreeing`):
    /// field `i` from its input into its output with plan `i`, as
    /// `plan<T>::execute` would, every field in one round. A field in place on
    /// any rank runs the plans one after another. A count of fields that is
    /// not `size()`, a field of another element type than its plan's
    /// (`DR_ERROR_INVALID_DTYPE`), a short input or output, fields sharing
    /// memory or a plan with an execution in flight throw on every rank alike,
    /// the message naming the field and the rank; nothing moves then.
    void execute(std::initializer_list<fused_field> fields)
    {
        run(fields.begin(), fields.size());
    }

    /// Executes the fused plans (as above) on a list of fields built at run time.
    void execute(const std::vector<fused_field>& fields) { run(fields.data(), fields.size()); }

private:
    fused(const fused_plan* plans, std::size_t n)
    {
        std::vector<const dr_plan*> handles;
        std::vector<dr_dtype> dtypes;
        for (std::size_t i = 0; i < n; ++i) {
            handles.push_back(plans[i].native_handle());
            dtypes.push_back(plans[i].dtype());
        }
        detail::check(dr_fused_create(detail::saturate<std::int64_t>(n), handles.data(), &handle_));
        dtypes_ = std::move(dtypes);
    }

    void run(const fused_field* fields, std::size_t n)
    {
        detail::finding found;
        if (n != dtypes_.size())
            found = {DR_ERROR_INVALID_SHAPE, std::to_string(n) + " fields for " +
                                                 std::to_string(dtypes_.size()) +
                                                 " fused plans: one field per plan"};
        for (std::size_t i = 0; i < n && found.status == DR_SUCCESS; ++i)
            if (fields[i].dtype() != dtypes_[i])
                found = {DR_ERROR_INVALID_DTYPE,
                         "field " + std::to_string(i) + ": its elements are dtype " +
                             std::to_string(fields[i].dtype()) + " but plan " + std::to_string(i) +
                             " was made for dtype " + std::to_string(dtypes_[i])};
        std::vector<const void*> ins;
        std::vector<void*> outs;
        std::vector<std::int64_t> in_elems, capacities;
        if (found.status == DR_SUCCESS) {
            for (std::size_t i = 0; i < n; ++i) {
                ins.push_back(fields[i].input());
                outs.push_back(fields[i].output());
                in_elems.push_back(detail::saturate<std::int64_t>(fields[i].input_size()));
                capacities.push_back(detail::saturate<std::int64_t>(fields[i].capacity()));
            }
        }
        const bool none = found.status != DR_SUCCESS;
        detail::check(dr_fused_execute_agreeing(
            handle_, none ? nullptr : ins.data(), none ? nullptr : in_elems.data(),
            none ? nullptr : outs.data(), none ? nullptr : capacities.data(), found.status,
            found.message.c_str()));
    }

    dr_fused* handle_ = nullptr;
    std::vector<dr_dtype> dtypes_;
};

namespace detail {

/// Executes the fresh plan `p` once into a new vector of exactly this rank's output.
/// A short input (`in_size`, checked by the library) or a failed allocation on any
/// rank is agreed by the library's execution, as dr_reshape agrees on every
/// outcome, even where nothing moves between ranks (DR_ERROR_BUFFER_TOO_SMALL on
/// every rank, with the lowest failing rank's message).
template <class T>
std::vector<T> run_once(plan<T>& p, const T* in, std::size_t in_size)
{
    std::vector<T> out;
    dr_status found = DR_SUCCESS;
    std::string message;
    try {
        out.resize(p.output_elems());
    } catch (const std::exception&) { // std::bad_alloc, or std::length_error
        // The library names the rank.
        message = "the output of " + std::to_string(p.output_elems()) +
                  " elements could not be allocated";
        found = DR_ERROR_BUFFER_TOO_SMALL;
    }
    p.run_agreeing(in, in_size, vector_data(out), out.size(), found, message);
    return out;
}

} // namespace detail

/// Reshapes in one call (collective): arguments as for `plan`'s constructor, `in`
/// this rank's input (`input_elems()` elements, taken on trust as in C). Returns
/// this rank's output, exactly its size. Not for bool: use `plan<bool>` with a bool
/// array.
///
/// It plans, allocates the output the plan asks for, and executes the plan
/// (`dr_reshape` needs the capacity before it plans, so it would plan twice). Like
/// `dr_reshape`, it fails on every rank alike, even where nothing moves between
/// ranks: a short input (of a vector or span) or a failed allocation on one rank is
/// agreed by the execution (`dr_plan_execute_agreeing`) before anything moves
/// (`DR_ERROR_BUFFER_TOO_SMALL` everywhere).
template <class T>
[[nodiscard]] std::vector<T> reshape(const T* in, const shape& gshape, std::int32_t split,
                                     MPI_Comm comm, std::int64_t local_len,
                                     const shape& new_gshape, std::int32_t new_split,
                                     std::int64_t new_local_len = balanced)
{
    plan<T> p(gshape, split, comm, local_len, new_gshape, new_split, new_local_len);
    return detail::run_once(p, in, detail::unchecked);
}

/// Reshapes in one call (as above) from a vector, whose length is checked
/// (`DR_ERROR_BUFFER_TOO_SMALL` when shorter than this rank's input).
template <class T, class Alloc>
[[nodiscard]] std::vector<T> reshape(const std::vector<T, Alloc>& in, const shape& gshape,
                                     std::int32_t split, MPI_Comm comm, std::int64_t local_len,
                                     const shape& new_gshape, std::int32_t new_split,
                                     std::int64_t new_local_len = balanced)
{
    plan<T> p(gshape, split, comm, local_len, new_gshape, new_split, new_local_len);
    return detail::run_once(p, detail::vector_data(in), in.size());
}

#ifdef __cpp_lib_span
/// Reshapes in one call (C++20, as above) from a span, whose length is checked.
template <class T, std::size_t N>
[[nodiscard]] std::vector<std::remove_const_t<T>>
reshape(std::span<T, N> in, const shape& gshape, std::int32_t split, MPI_Comm comm,
        std::int64_t local_len, const shape& new_gshape, std::int32_t new_split,
        std::int64_t new_local_len = balanced)
{
    plan<std::remove_const_t<T>> p(gshape, split, comm, local_len, new_gshape, new_split,
                                   new_local_len);
    return detail::run_once(p, in.data(), in.size());
}
#endif

/// Redistributes (and reshapes) in one call (collective over `comm`) from the
/// layout `in_layout` to `out_layout`: arguments as for `plan`'s constructor from
/// layouts, `in` this rank's input box (`input_box().elems()` elements, C order,
/// taken on trust as in C). Returns this rank's output box, exactly its size. Not
/// for bool: use `plan<bool>` with a bool array. It plans, allocates and executes
/// as the slab one-shot does, and fails as it does: on every rank alike, a short
/// input (of a vector or span) or a failed allocation on one rank agreed by the
/// execution (`dr_plan_execute_agreeing`) before anything moves.
template <class T>
[[nodiscard]] std::vector<T> reshape(const T* in, const layout& in_layout,
                                     const layout& out_layout, MPI_Comm comm)
{
    plan<T> p(in_layout, out_layout, comm);
    return detail::run_once(p, in, detail::unchecked);
}

/// Redistributes in one call (as above) from a vector, whose length is checked
/// (`DR_ERROR_BUFFER_TOO_SMALL` when shorter than this rank's input box).
template <class T, class Alloc>
[[nodiscard]] std::vector<T> reshape(const std::vector<T, Alloc>& in, const layout& in_layout,
                                     const layout& out_layout, MPI_Comm comm)
{
    plan<T> p(in_layout, out_layout, comm);
    return detail::run_once(p, detail::vector_data(in), in.size());
}

#ifdef __cpp_lib_span
/// Redistributes in one call (C++20, as above) from a span, whose length is checked.
template <class T, std::size_t N>
[[nodiscard]] std::vector<std::remove_const_t<T>> reshape(std::span<T, N> in,
                                                          const layout& in_layout,
                                                          const layout& out_layout, MPI_Comm comm)
{
    plan<std::remove_const_t<T>> p(in_layout, out_layout, comm);
    return detail::run_once(p, in.data(), in.size());
}
#endif

} // namespace distreshape

#endif /* DISTRESHAPE_HPP */
