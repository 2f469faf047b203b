// Grid layouts in the C++ interface (distreshape::layout, plan<T>(layout, layout,
// comm), input_box, output_box), at 1-8 ranks (2x3 and 3x2 at 6, a prime at 7,
// 2x2x2 at 8, more ranks than rows from 6 on), built as C++17 and C++20:
//  - x-pencils -> y-pencils on every 2-D factorization of the rank count, also with
//    tiny options and as std::int64_t; bricks -> pencils on every 3-D factorization
//    (each with one 2-D factorization in turn),
//    bricks -> replicated over the middle grid axis and back;
//    a shape change with -1 and explicit lengths (zeros among them); a replicated
//    grid axis, in the output and in the input;
//  - every rank's boxes against an independent computation (balanced blocks
//    n/p + (c < n%p) at c*(n/p) + min(c, n%p), explicit lengths as prefix sums, c
//    the rank's row-major grid coordinate), input_elems/output_elems/output_shape;
//  - every output element checked against its global C-order flat index, out of
//    place (vectors), in place and through execute_begin, and through the one-shot
//    reshape between layouts (vector, pointer, C++20 span; its errors agreed);
//  - errors: a grid of the wrong size throws DR_ERROR_INVALID_DISTRIBUTION on every
//    rank, the message naming a rank; the local checks of layout's constructor and
//    with_lengths; layout values copied, assigned and compared.
#include <distreshape.hpp>
#include <mpi.h>

#include "checks.hpp"

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <string>
#include <type_traits>
#include <vector>

namespace dr = distreshape;

namespace {

static_assert(std::is_default_constructible_v<dr::layout> &&
              std::is_copy_constructible_v<dr::layout> && std::is_copy_assignable_v<dr::layout> &&
              std::is_nothrow_move_constructible_v<dr::layout>);

using ivec = std::vector<std::int64_t>;
constexpr int ns = dr::not_split;

// This rank's coordinates on `grid`, row-major (the last axis fastest).
std::vector<int> coords(const std::vector<int>& grid)
{
    std::vector<int> c(grid.size());
    int r = rank;
    for (std::size_t g = grid.size(); g-- > 0;) {
        c[g] = r % grid[g];
        r /= grid[g];
    }
    return c;
}

// The box this rank should hold of layout `l` whose shape resolves to `gshape`.
dr::box expected_box(const dr::layout& l, const ivec& gshape)
{
    const std::vector<int> c = coords(l.grid_dims());
    dr::box b;
    for (std::size_t i = 0; i < gshape.size(); ++i) {
        const std::int64_t n = gshape[i];
        const int g = l.axis_grid()[i];
        if (g == ns) {
            b.offsets.push_back(0);
            b.extents.push_back(n);
            continue;
        }
        const std::int64_t p = l.grid_dims()[static_cast<std::size_t>(g)];
        const std::int64_t k = c[static_cast<std::size_t>(g)];
        const ivec lens = l.lengths(static_cast<int>(i));
        if (lens.empty()) {
            b.offsets.push_back(k * (n / p) + std::min(k, n % p));
            b.extents.push_back(n / p + (k < n % p ? 1 : 0));
        } else {
            std::int64_t off = 0;
            for (std::int64_t j = 0; j < k; ++j) off += lens[static_cast<std::size_t>(j)];
            b.offsets.push_back(off);
            b.extents.push_back(lens[static_cast<std::size_t>(k)]);
        }
    }
    return b;
}

std::string str(const ivec& v)
{
    std::string s = "{";
    for (std::size_t i = 0; i < v.size(); ++i) {
        if (i) s += ',';
        s += std::to_string(v[i]);
    }
    s += '}';
    return s;
}

// Calls f(flat index) for each element of box `b` of an array of shape `gshape`,
// in the box's C order.
template <class F>
void for_each_in_box(const dr::box& b, const ivec& gshape, F f)
{
    const std::size_t n = gshape.size();
    if (b.elems() == 0) return;
    ivec idx(n, 0);
    for (;;) {
        std::int64_t flat = 0;
        for (std::size_t i = 0; i < n; ++i) flat = flat * gshape[i] + b.offsets[i] + idx[i];
        f(flat);
        std::size_t i = n;
        while (i-- > 0) {
            if (++idx[i] < b.extents[i]) break;
            idx[i] = 0;
        }
        if (i == static_cast<std::size_t>(-1)) return;
    }
}

template <class T>
std::vector<T> input_of(const dr::box& b, const ivec& gshape)
{
    std::vector<T> v;
    for_each_in_box(b, gshape, [&](std::int64_t flat) { v.push_back(static_cast<T>(flat)); });
    return v;
}

template <class T>
bool output_ok(const T* data, const dr::box& b, const ivec& gshape)
{
    std::size_t k = 0, bad = 0;
    for_each_in_box(b, gshape,
                    [&](std::int64_t flat) { bad += data[k++] != static_cast<T>(flat); });
    return bad == 0;
}

// Plans `in` -> `out` (resolving to `out_shape`), checks the boxes and the sizes,
// and executes out of place, in place and non-blocking, checking every element.
template <class T>
void run_case(const std::string& name, const dr::layout& in, const dr::layout& out,
              const ivec& out_shape, const dr::options* opts = nullptr)
{
    dr::plan<T> p = opts ? dr::plan<T>(in, out, MPI_COMM_WORLD, *opts)
                         : dr::plan<T>(in, out, MPI_COMM_WORLD);
    const ivec in_shape = in.global_shape();
    const dr::box ib = p.input_box(), ob = p.output_box();
    const dr::box ie = expected_box(in, in_shape), oe = expected_box(out, out_shape);
    check(ib == ie, name + ": input box " + str(ib.offsets) + str(ib.extents) + " expected " +
                        str(ie.offsets) + str(ie.extents));
    check(ob == oe, name + ": output box " + str(ob.offsets) + str(ob.extents) + " expected " +
                        str(oe.offsets) + str(oe.extents));
    check(p.output_shape() == out_shape, name + ": output shape " + str(p.output_shape()));
    check(p.input_elems() == ie.elems(), name + ": input_elems");
    check(p.output_elems() == oe.elems(), name + ": output_elems");

    const std::vector<T> input = input_of<T>(ie, in_shape);
    std::vector<T> output(p.output_elems());
    p.execute(input, output);
    check(output_ok(output.data(), oe, out_shape), name + ": out of place");

    std::vector<T> buf(std::max(p.input_elems(), p.output_elems()));
    std::copy(input.begin(), input.end(), buf.begin());
    p.execute_in_place(buf);
    check(output_ok(buf.data(), oe, out_shape), name + ": in place");

    std::vector<T> later(p.output_elems(), T(-1));
    dr::request r = p.execute_begin(input, later);
    r.wait();
    check(!r.pending() && output_ok(later.data(), oe, out_shape), name + ": execute_begin");
}

// Every ordered factorization of nranks into `parts` factors.
std::vector<std::vector<int>> factorizations(int n, int parts)
{
    if (parts == 1) return {{n}};
    std::vector<std::vector<int>> all;
    for (int a = 1; a <= n; ++a)
        if (n % a == 0)
            for (std::vector<int> rest : factorizations(n / a, parts - 1)) {
                rest.insert(rest.begin(), a);
                all.push_back(rest);
            }
    return all;
}

std::string str(const std::vector<int>& v)
{
    ivec w(v.begin(), v.end());
    return str(w);
}

void check_pencils()
{
    const ivec s{5, 7, 6};
    dr::options tiny;
    tiny.max_message_bytes = 24;
    tiny.slot_bytes = 1;
    tiny.run_budget = 4;
    tiny.window = 1;
    tiny.in_place_budget = 16;
    for (const std::vector<int>& g : factorizations(nranks, 2)) {
        const dr::layout x(s, g, {ns, 0, 1}), y(s, g, {0, ns, 1});
        const std::string name = "x->y pencils on " + str(g);
        run_case<double>(name, x, y, s);
        run_case<std::int64_t>(name + " (int64)", x, y, s);
        run_case<double>(name + " with tiny options", x, y, s, &tiny);
        run_case<double>("y->x pencils on " + str(g), y, x, s);
    }
}

void check_bricks()
{
    const ivec s{6, 5, 7};
    // Each 3-D grid with one 2-D grid, in turn: every grid of both kinds is planned
    // (there are at least as many 3-D factorizations as 2-D ones).
    const std::vector<std::vector<int>> grids3 = factorizations(nranks, 3),
                                        grids2 = factorizations(nranks, 2);
    for (std::size_t i = 0; i < grids3.size(); ++i) {
        const std::vector<int>&g3 = grids3[i], &g2 = grids2[i % grids2.size()];
        const dr::layout bricks(s, g3, {0, 1, 2}), pencils(s, g2, {ns, 0, 1});
        run_case<double>("bricks " + str(g3) + " -> pencils " + str(g2), bricks, pencils, s);
        const dr::layout replicated(s, g3, {2, ns, 0});
        run_case<double>("bricks " + str(g3) + " -> replicated over grid axis 1", bricks,
                         replicated, s);
        run_case<double>("replicated over grid axis 1 of " + str(g3) + " -> bricks", replicated,
                         bricks, s);
    }
}

// {4, 6, 5} with all 4 rows on the last rank -> {-1, 10} (= {12, 10}) with no
// columns on rank 0 and the others balanced over the rest.
void check_shape_change()
{
    ivec rows(static_cast<std::size_t>(nranks), 0);
    rows.back() = 4;
    ivec cols(static_cast<std::size_t>(nranks), 0);
    for (int c = 0; c < 10; ++c)
        cols[nranks == 1 ? 0 : 1 + static_cast<std::size_t>(c % (nranks - 1))]++;
    const dr::layout in = dr::layout({4, 6, 5}, {nranks}, {0, ns, ns}).with_lengths(0, rows);
    dr::layout out({-1, 10}, {nranks}, {ns, 0});
    out.with_lengths(1, cols);
    check(out.global_shape() == ivec{-1, 10} && out.lengths(1) == cols && in.lengths(0) == rows &&
              out.lengths(0).empty(),
          "layout accessors");
    run_case<double>("{4,6,5} explicit -> {-1,10} explicit", in, out, {12, 10});
    run_case<double>("{12,10} explicit -> {4,-1,5} balanced",
                     dr::layout({12, 10}, {nranks}, {ns, 0}).with_lengths(1, cols),
                     dr::layout({4, -1, 5}, {nranks}, {0, ns, ns}), {4, 6, 5});
}

// A grid axis splitting no array axis replicates: rows over all ranks -> columns
// over grid axis 1 of {a, b} (grid axis 0 replicates), and back.
void check_replicated()
{
    const ivec s{8, 9};
    for (const std::vector<int>& g : factorizations(nranks, 2)) {
        const dr::layout rows(s, {nranks}, {0, ns}), cols(s, g, {ns, 1});
        run_case<double>("rows -> columns replicated on " + str(g), rows, cols, s);
        run_case<double>("columns replicated on " + str(g) + " -> rows", cols, rows, s);
        const dr::layout rows_rep(s, g, {1, ns});
        run_case<double>("rows replicated on " + str(g) + " -> itself", rows_rep, rows_rep, s);
    }
}

template <class F>
dr::error thrown(F f)
{
    try {
        f();
    } catch (const dr::error& e) {
        return e;
    }
    return dr::error(DR_SUCCESS, "nothing thrown");
}

// The one-shot reshape between layouts from a vector, a pointer and (C++20) a span:
// x-pencils -> (-1, 6) rows, every element; a short vector on rank 0 and a grid of
// the wrong size throw on every rank.
void check_one_shot()
{
    const ivec s{5, 7, 6}, rows_shape{35, 6};
    const std::vector<int> g = factorizations(nranks, 2).back();
    const dr::layout x(s, g, {ns, 0, 1}), rows({-1, 6}, {nranks}, {0, ns});
    const std::vector<double> input = input_of<double>(expected_box(x, s), s);
    const dr::box ob = expected_box(rows, rows_shape);
    const std::vector<double> once = dr::reshape(input, x, rows, MPI_COMM_WORLD);
    check(once.size() == static_cast<std::size_t>(ob.elems()) &&
              output_ok(once.data(), ob, rows_shape),
          "reshape(vector, layouts)");
    const std::vector<double> from_pointer = dr::reshape(input.data(), x, rows, MPI_COMM_WORLD);
    check(from_pointer == once, "reshape(pointer, layouts)");
#ifdef __cpp_lib_span
    const std::vector<double> from_span =
        dr::reshape(std::span<const double>(input), x, rows, MPI_COMM_WORLD);
    check(from_span == once, "reshape(span, layouts)");
#endif
    // Rank 0's block is never empty (balanced blocks put the remainder first).
    std::vector<double> shorter = input;
    if (rank == 0) shorter.pop_back();
    const dr::error e = thrown([&] { (void)dr::reshape(shorter, x, rows, MPI_COMM_WORLD); });
    check(e.status() == DR_ERROR_BUFFER_TOO_SMALL,
          "reshape(vector, layouts) with a short input on rank 0: status " +
              std::to_string(e.status()) + " (" + e.what() + ")");
    const dr::layout wrong(s, {nranks + 1}, {0, ns, ns});
    const dr::error e2 = thrown([&] { (void)dr::reshape(input, wrong, rows, MPI_COMM_WORLD); });
    check(e2.status() == DR_ERROR_INVALID_DISTRIBUTION,
          "reshape between layouts with a grid of the wrong size: status " +
              std::to_string(e2.status()));
}

void check_errors()
{
    // A grid of nranks + 1: every rank throws, the message names a rank.
    const dr::layout wrong({8, 9}, {nranks + 1}, {0, ns}), right({8, 9}, {nranks}, {ns, 0});
    const dr::error e = thrown([&] { dr::plan<double> p(wrong, right, MPI_COMM_WORLD); });
    const std::string what = e.what();
    check(e.status() == DR_ERROR_INVALID_DISTRIBUTION,
          "wrong grid size: status " + std::to_string(e.status()) + " (" + what + ")");
    check(what.find("rank") != std::string::npos, "wrong grid size: no rank named: " + what);
    const dr::error e2 = thrown([&] { dr::plan<double> p(right, wrong, MPI_COMM_WORLD); });
    check(e2.status() == DR_ERROR_INVALID_DISTRIBUTION, "wrong output grid size");
    // Lengths that do not add up (to 9, not 8): every rank.
    ivec lens(static_cast<std::size_t>(nranks), 0);
    lens[0] = 9;
    const dr::layout short_lens = dr::layout({8, 9}, {nranks}, {0, ns}).with_lengths(0, lens);
    const dr::error e3 = thrown([&] { dr::plan<double> p(short_lens, right, MPI_COMM_WORLD); });
    check(e3.status() != DR_SUCCESS, "lengths not adding up did not throw");
    // An empty layout: every rank throws.
    const dr::error e4 =
        thrown([&] { dr::plan<double> p(dr::layout(), right, MPI_COMM_WORLD); });
    check(e4.status() != DR_SUCCESS, "an empty layout did not throw");
    // A correct plan still works after the failures.
    run_case<double>("rows -> columns after errors", dr::layout({8, 9}, {nranks}, {0, ns}), right,
                     {8, 9});

    // Local checks (this rank only, nothing collective).
    check(thrown([] { dr::layout({8, 9}, {1}, {0}); }).status() == DR_ERROR_INVALID_SPLIT,
          "axis_grid of the wrong length");
    check(thrown([] { dr::layout({8, 9}, {1}, {-2, ns}); }).status() == DR_ERROR_INVALID_SPLIT,
          "negative axis_grid value");
    dr::layout l({8, 9}, {nranks}, {0, ns});
    check(thrown([&] { l.with_lengths(0, ivec(static_cast<std::size_t>(nranks) + 1, 0)); })
                  .status() == DR_ERROR_INVALID_DISTRIBUTION,
          "with_lengths: wrong count");
    check(thrown([&] { l.with_lengths(1, {9}); }).status() == DR_ERROR_INVALID_SPLIT,
          "with_lengths: an axis not split");
    check(thrown([&] { l.with_lengths(2, {9}); }).status() == DR_ERROR_INVALID_SPLIT,
          "with_lengths: no such axis");
    check(l == dr::layout({8, 9}, {nranks}, {0, ns}), "a failed with_lengths changed the layout");
}

void check_values()
{
    const dr::layout a({8, 9}, {nranks}, {0, ns});
    dr::layout b = a;
    check(a == b && !(a != b), "a copy is not equal");
    ivec lens(static_cast<std::size_t>(nranks), 0);
    lens[0] = 8;
    b.with_lengths(0, lens);
    check(a != b && b.lengths(0) == lens && a.lengths(0).empty(), "with_lengths on a copy");
    dr::layout c;
    check(c != a && c.ndims() == 0, "an empty layout");
    c = b;
    check(c == b, "assignment");
    c.with_lengths(0, {});
    check(c == a, "with_lengths(axis, {}) does not make the axis balanced again");
    check(dr::layout({8, 9}, {nranks}, {0, ns}) != dr::layout({8, 9}, {nranks}, {ns, 0}) &&
              dr::layout({8, 9}, {nranks}, {0, ns}) != dr::layout({8, -1}, {nranks}, {0, ns}) &&
              dr::layout({8, 9}, {nranks, 1}, {0, ns}) != dr::layout({8, 9}, {nranks}, {0, ns}),
          "layouts differing are equal");
    // A copied layout plans as the original (and the copy's plan outlives both).
    dr::plan<double> p;
    {
        const dr::layout in = b, out = dr::layout({8, 9}, {nranks}, {ns, 0});
        p = dr::plan<double>(in, out, MPI_COMM_WORLD);
    }
    check(p.input_box() == expected_box(b, {8, 9}), "a copied layout's input box");
    // A slab plan's boxes: its slab, whole along the other axes.
    dr::plan<double> slab({8, 9}, 0, MPI_COMM_WORLD, dr::balanced_slab(8, nranks, rank).len,
                          {9, 8}, 1);
    check(slab.input_box() == expected_box(a, {8, 9}) &&
              slab.output_box() == expected_box(dr::layout({9, 8}, {nranks}, {ns, 0}), {9, 8}),
          "a slab plan's boxes");
}

} // namespace

int main(int argc, char** argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &nranks);

    try {
        check_pencils();
        check_bricks();
        check_shape_change();
        check_replicated();
        check_errors();
        check_one_shot();
        check_values();
    } catch (const dr::error& e) {
        check(false, std::string("unexpected error: ") + e.what());
    }

    int total = 0;
    MPI_Allreduce(&failures, &total, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0)
        std::printf("%s: layouts C++%ld, %d failed check(s) on %d rank(s)\n",
                    total ? "FAILED" : "OK", __cplusplus / 100 % 100, total, nranks);
    MPI_Finalize();
    return total ? 1 : 0;
}
