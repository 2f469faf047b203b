// Strided local storage in the C++ interface (plan<T>(layout, strides, layout,
// strides, comm), spans(), strides(), and where <mdspan> exists execute on
// std::mdspan views), at 1-4 ranks, built as C++17 and C++20:
//  - x-pencils of a (6, 5, 4) array stored inside a halo of 1 -> y-pencils
//    stored y-fastest (axis order 1, 0, 2 in memory: a permuted storage) inside
//    padding, through pointers to each box's first element; every output element
//    checked against its global C-order index, every halo and padding element
//    against its sentinel, the input unchanged; executed twice;
//  - spans() and strides() against the padded arrays';
//  - errors as distreshape::error with the status: overlapping strides
//    (DR_ERROR_INVALID_STRIDES on every rank), a count of strides that is not
//    the axis count (on every rank, also when only rank 0's is wrong), in
//    place, a capacity short of the output span;
//  - with <mdspan> (GCC 12's library has none; ctest then also builds this test
//    against the reference implementation in tests/third_party/mdspan):
//    layout_stride views of the same storage, a layout_right view whose strides
//    differ from the plan's, refused on every rank with nothing written, and a
//    plan executed on a layout_right input view and a layout_left output view.
#include <distreshape.hpp>
#include <mpi.h>

#include "checks.hpp"

#include <algorithm>
#include <array>
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

namespace dr = distreshape;

namespace {

using ivec = std::vector<std::int64_t>;
constexpr std::int64_t n0 = 6, n1 = 5, n2 = 4;
constexpr double sentinel = -7.0;

// A padded 3-D array: `box` extents stored at `strides` from the element at
// `first`, every other element a sentinel.
struct padded {
    std::vector<double> data;
    std::int64_t first;
    ivec box, strides;

    std::int64_t at(std::int64_t i, std::int64_t j, std::int64_t k) const
    {
        return first + i * strides[0] + j * strides[1] + k * strides[2];
    }

    // Every box element is want(i, j, k) and every other element a sentinel.
    template <class F>
    bool holds(F want) const
    {
        std::vector<char> in_box(data.size(), 0);
        for (std::int64_t i = 0; i < box[0]; ++i)
            for (std::int64_t j = 0; j < box[1]; ++j)
                for (std::int64_t k = 0; k < box[2]; ++k) {
                    in_box[at(i, j, k)] = 1;
                    if (data[at(i, j, k)] != want(i, j, k)) return false;
                }
        for (std::size_t e = 0; e < data.size(); ++e)
            if (!in_box[e] && data[e] != sentinel) return false;
        return true;
    }
};

// The box inside a halo of `h`, C order.
padded with_halo(const ivec& box, std::int64_t h)
{
    const ivec p{box[0] + 2 * h, box[1] + 2 * h, box[2] + 2 * h};
    const ivec s{p[1] * p[2], p[2], 1};
    return {std::vector<double>(p[0] * p[1] * p[2], sentinel), h * (s[0] + s[1] + s[2]), box, s};
}

// The box stored axis 1 fastest, then axis 0, then axis 2 (memory order 2, 0, 1
// from the slowest), each axis padded by 1 at its end.
padded permuted(const ivec& box)
{
    const ivec p{box[0] + 1, box[1] + 1, box[2] + 1};
    const ivec s{p[1], 1, p[0] * p[1]};
    return {std::vector<double>(p[0] * p[1] * p[2], sentinel), 0, box, s};
}

dr::layout xpencils(const std::vector<int>& grid)
{
    return dr::layout({n0, n1, n2}, grid, {dr::not_split, 0, 1});
}

dr::layout ypencils(const std::vector<int>& grid)
{
    return dr::layout({n0, n1, n2}, grid, {0, dr::not_split, 1});
}

std::vector<int> grid2()
{
    int dims[2] = {0, 0};
    MPI_Dims_create(nranks, 2, dims);
    return {dims[0], dims[1]};
}

// The global C-order index of box element (i, j, k) of the box at `offsets`.
double global(const ivec& offsets, std::int64_t i, std::int64_t j, std::int64_t k)
{
    return static_cast<double>(((offsets[0] + i) * n1 + offsets[1] + j) * n2 + offsets[2] + k);
}

#ifdef __cpp_lib_mdspan
// A plan from C-order input boxes to output boxes stored axis 0 fastest,
// executed on a layout_right view of the input and a layout_left view of the
// output (the strides come from the mappings): every element checked, the
// sentinel past the output box untouched, the input unchanged.
void check_dense_mdspan_layouts(const dr::layout& x, const dr::layout& y, const dr::box& ib,
                                const dr::box& ob)
{
    using ext = std::dextents<std::size_t, 3>;
    const auto extents = [](const dr::box& b) {
        return ext(std::size_t(b.extents[0]), std::size_t(b.extents[1]), std::size_t(b.extents[2]));
    };
    const ivec left{1, ob.extents[0], ob.extents[0] * ob.extents[1]};
    dr::plan<double> p(x, {}, y, left, MPI_COMM_WORLD);
    std::vector<double> in(ib.elems()), out(ob.elems() + 1, sentinel);
    std::mdspan<const double, ext, std::layout_right> in_view(in.data(), extents(ib));
    std::mdspan<double, ext, std::layout_left> out_view(out.data(), extents(ob));
    for (std::int64_t i = 0; i < ib.extents[0]; ++i)
        for (std::int64_t j = 0; j < ib.extents[1]; ++j)
            for (std::int64_t k = 0; k < ib.extents[2]; ++k)
                in[(i * ib.extents[1] + j) * ib.extents[2] + k] = global(ib.offsets, i, j, k);
    const std::vector<double> before = in;
    p.execute(in_view, out_view);
    bool all = out.back() == sentinel;
    for (std::int64_t i = 0; i < ob.extents[0]; ++i)
        for (std::int64_t j = 0; j < ob.extents[1]; ++j)
            for (std::int64_t k = 0; k < ob.extents[2]; ++k)
                all = all && out[i + (j + k * ob.extents[1]) * ob.extents[0]] == global(ob.offsets, i, j, k);
    check(all, "mdspan layout_right input -> layout_left output");
    check(in == before, "input of the layout_left plan unchanged");
}
#endif

void check_halo_to_permuted()
{
    const auto grid = grid2();
    const dr::layout x = xpencils(grid), y = ypencils(grid);
    // The boxes, from a plan without strides.
    const dr::box ib = dr::plan<double>(x, y, MPI_COMM_WORLD).input_box();
    const dr::box ob = dr::plan<double>(x, y, MPI_COMM_WORLD).output_box();
    padded in = with_halo(ib.extents, 1), out = permuted(ob.extents);
    for (std::int64_t i = 0; i < ib.extents[0]; ++i)
        for (std::int64_t j = 0; j < ib.extents[1]; ++j)
            for (std::int64_t k = 0; k < ib.extents[2]; ++k)
                in.data[in.at(i, j, k)] = global(ib.offsets, i, j, k);
    const std::vector<double> before = in.data;

    dr::plan<double> p(x, in.strides, y, out.strides, MPI_COMM_WORLD);
    check(p.input_box() == ib && p.output_box() == ob, "boxes of the strided plan");
    const auto [in_span, out_span] = p.spans();
    const bool empty_out = ob.elems() == 0, empty_in = ib.elems() == 0;
    check(empty_in || in_span == static_cast<std::size_t>(in.at(ib.extents[0] - 1, ib.extents[1] - 1,
                                                               ib.extents[2] - 1) - in.first + 1),
          "input span");
    check(empty_out || out_span == static_cast<std::size_t>(out.at(ob.extents[0] - 1, ob.extents[1] - 1,
                                                                 ob.extents[2] - 1) + 1),
          "output span");
    const auto [is, os] = p.strides();
    check(is == in.strides && os == out.strides, "strides()");

    for (int round = 0; round < 2; ++round) {
        p.execute(in.data.data() + in.first, out.data.data(), out.data.size());
        check(out.holds([&](auto i, auto j, auto k) { return global(ob.offsets, i, j, k); }),
              "halo -> permuted output, round " + std::to_string(round));
        check(in.data == before, "input unchanged");
    }

    // Capacity short of the span: agreed on every rank (the plan communicates
    // unless one rank holds everything).
    const std::size_t short_cap = out_span == 0 ? 0 : out_span - 1;
    std::vector<double> keep = out.data;
    if (nranks > 1) {
        const dr_status s = status_of([&] { p.execute(in.data.data() + in.first, out.data.data(), short_cap); });
        int any = s == DR_ERROR_BUFFER_TOO_SMALL;
        MPI_Allreduce(MPI_IN_PLACE, &any, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
        check(s == (any ? DR_ERROR_BUFFER_TOO_SMALL : DR_SUCCESS), "short capacity");
        check(out.data == keep, "nothing written with a short capacity");
    }
    // In place on a strided plan.
    std::vector<double> buf(std::max(in.data.size(), out.data.size()), 0.0);
    check(status_of([&] { p.execute_in_place(buf.data(), buf.size()); }) ==
              DR_ERROR_INVALID_STRIDES,
          "in place refused");

#ifdef __cpp_lib_mdspan
    // The same storage as layout_stride views.
    using ext = std::dextents<std::size_t, 3>;
    auto view = [](auto* data, const padded& a) {
        const std::array<std::size_t, 3> e{std::size_t(a.box[0]), std::size_t(a.box[1]),
                                           std::size_t(a.box[2])};
        const std::array<std::size_t, 3> s{std::size_t(a.strides[0]), std::size_t(a.strides[1]),
                                           std::size_t(a.strides[2])};
        return std::mdspan(data + a.first, std::layout_stride::mapping<ext>(ext(e), s));
    };
    std::fill(out.data.begin(), out.data.end(), sentinel);
    p.execute(view(static_cast<const double*>(in.data.data()), in), view(out.data.data(), out));
    check(out.holds([&](auto i, auto j, auto k) { return global(ob.offsets, i, j, k); }),
          "mdspan layout_stride views");
    // A C-order view of the output box: its strides are not the plan's.
    std::vector<double> dense(ob.elems() + 1, sentinel);
    std::mdspan<double, ext> right(dense.data(), ob.extents[0], ob.extents[1], ob.extents[2]);
    const dr_status s = status_of(
        [&] { p.execute(view(static_cast<const double*>(in.data.data()), in), right); });
    int strided_out = ob.elems() > 0 && (ob.extents[0] > 1 || ob.extents[1] > 1 || ob.extents[2] > 1);
    MPI_Allreduce(MPI_IN_PLACE, &strided_out, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    check(s == (strided_out ? DR_ERROR_INVALID_STRIDES : DR_SUCCESS), "layout_right view refused");
    check(!strided_out || std::all_of(dense.begin(), dense.end(), [](double v) { return v == sentinel; }),
          "nothing written to a refused view");
    check_dense_mdspan_layouts(x, y, ib, ob);
#endif
}

void check_refused_strides()
{
    const auto grid = grid2();
    const dr::layout x = xpencils(grid), y = ypencils(grid);
    // Two axes at stride 1: two elements at one address wherever a box has more
    // than one element along both (every rank: n0 = 6 is whole, n1 / p0 > 1 for
    // p0 <= 2), refused on every rank.
    const dr_status overlap = status_of([&] {
        dr::plan<double> p(x, {1, 1, 1}, y, {}, MPI_COMM_WORLD);
    });
    check(overlap == DR_ERROR_INVALID_STRIDES, "overlapping strides: status " + std::to_string(overlap));
    // Two strides for three axes on every rank: refused on every rank.
    const dr_status count = status_of([&] { dr::plan<double> p(x, ivec{30, 1}, y, {}, MPI_COMM_WORLD); });
    check(count == DR_ERROR_INVALID_STRIDES, "a count of strides that is not the axis count");
    // Two strides on rank 0 only (the others pass none): every rank throws,
    // none is left waiting in plan creation, and the message names rank 0.
    std::string message;
    dr_status one = DR_SUCCESS;
    try {
        dr::plan<double> p(x, rank == 0 ? ivec{30, 1} : ivec{}, y, {}, MPI_COMM_WORLD);
    } catch (const dr::error& e) {
        one = e.status();
        message = e.what();
    }
    check(one == DR_ERROR_INVALID_STRIDES, "a wrong count on rank 0 only: status " + std::to_string(one));
    check(message.find("rank 0") != std::string::npos, "the message names rank 0: " + message);
}

} // namespace

int main(int argc, char** argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &nranks);

    try {
        check_halo_to_permuted();
        check_refused_strides();
    } catch (const dr::error& e) {
        check(false, std::string("unexpected error: ") + e.what());
    }

    int total = 0;
    MPI_Allreduce(&failures, &total, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0)
        std::printf("%s: strided C++%ld%s, %d failed check(s) on %d rank(s)\n",
                    total ? "FAILED" : "OK", __cplusplus / 100 % 100,
#ifdef __cpp_lib_mdspan
                    " with mdspan",
#else
                    " without mdspan",
#endif
                    total, nranks);
    MPI_Finalize();
    return total ? 1 : 0;
}
