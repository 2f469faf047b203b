// Fused plans in the C++ interface (distreshape::fused, fused_plan,
// fused_field), at 1-8 ranks on the 2-D grid of MPI_Dims_create, built as
// C++17 and C++20 (spans too):
//  - the x -> y transpose of a velocity field (double, one plan fused three
//    times) with the y -> x transpose of a scalar (float) of other extents,
//    from vectors, from pointers with their sizes and (C++20) from spans,
//    twice; then the same plan three times alone;
//  - a plan on strided storage (the input inside a halo of sentinels) with a
//    dense plan and one that sends nothing (std::int64_t);
//  - in place on the last rank only and on every rank;
//  - plans that go before the fused object, which keeps them;
//  - refusals with one status on every rank: a count of fields that is not the
//    plans' (DR_ERROR_INVALID_SHAPE), a field of another element type on rank 0
//    (DR_ERROR_INVALID_DTYPE), a short output on the last rank
//    (DR_ERROR_BUFFER_TOO_SMALL), two fields sharing an output
//    (DR_ERROR_ALIASING), plans in another order on rank 0
//    (DR_ERROR_INCONSISTENT_ARGUMENTS), plans of two communicators
//    (DR_ERROR_INVALID_COMMUNICATOR); an empty fused object
//    (DR_ERROR_NULL_POINTER, locally); nothing written by a refused execution.
// Every output element is checked against its global C-order index plus the
// field's offset, a sentinel after every output, and every input unchanged.
#include <distreshape.hpp>
#include <mpi.h>

#include "checks.hpp"

#include <array>
#include <cstdint>
#include <cstdio>
#include <string>
#include <utility>
#include <vector>

namespace dr = distreshape;

namespace {

using ivec = std::vector<std::int64_t>;
constexpr double field_offset = 1000.0;
constexpr double sentinel = -7.0;
std::vector<int> grid;

// This rank's box of a layout of `shape` split as `axes` over `grid`, computed
// here (balanced blocks over the row-major grid coordinates).
dr::box box_of(const ivec& shape, const std::array<int, 3>& axes)
{
    const int coord[2] = {rank / grid[1], rank % grid[1]};
    dr::box b{ivec(3), ivec(3)};
    for (int k = 0; k < 3; ++k) {
        if (axes[k] == dr::not_split) {
            b.offsets[k] = 0;
            b.extents[k] = shape[k];
        } else {
            const dr::slab s = dr::balanced_slab(shape[k], grid[axes[k]], coord[axes[k]]);
            b.offsets[k] = s.offset;
            b.extents[k] = s.len;
        }
    }
    return b;
}

// One side: the array's shape and the grid axis splitting each of its axes.
struct side {
    ivec shape;
    std::array<int, 3> axes;

    dr::layout layout() const { return dr::layout(shape, grid, {axes[0], axes[1], axes[2]}); }
    dr::box box() const { return box_of(shape, axes); }
};

// The global C-order index of element `idx` of `b` in `shape`.
std::int64_t global(const ivec& shape, const dr::box& b, const std::array<std::int64_t, 3>& idx)
{
    return ((b.offsets[0] + idx[0]) * shape[1] + b.offsets[1] + idx[1]) * shape[2] +
           b.offsets[2] + idx[2];
}

// A field of a plan of T from `in` to `out`: its input inside a halo of `halo`
// elements on every axis (sentinels), its output (the box, then a sentinel).
template <class T>
struct field {
    side in, out;
    int halo;
    T add;
    dr::box in_box, out_box;
    ivec strides;
    std::int64_t first = 0;
    std::vector<T> input, output;

    field(side i, side o, int h, int number)
        : in(std::move(i)), out(std::move(o)), halo(h), add(static_cast<T>(number * field_offset)),
          in_box(in.box()), out_box(out.box()), strides(3)
    {
        std::int64_t step = 1;
        for (int k = 2; k >= 0; --k) {
            strides[k] = step;
            first += halo * step;
            step *= in_box.extents[k] + 2 * halo;
        }
        input.assign(static_cast<std::size_t>(step), static_cast<T>(sentinel));
        for_each(in_box, [&](const std::array<std::int64_t, 3>& idx, std::int64_t) {
            const std::int64_t at = first + idx[0] * strides[0] + idx[1] * strides[1] + idx[2];
            input[at] = static_cast<T>(global(in.shape, in_box, idx)) + add;
        });
        clear();
    }

    template <class F>
    static void for_each(const dr::box& b, F&& f)
    {
        std::array<std::int64_t, 3> idx{};
        std::int64_t flat = 0;
        for (idx[0] = 0; idx[0] < b.extents[0]; ++idx[0])
            for (idx[1] = 0; idx[1] < b.extents[1]; ++idx[1])
                for (idx[2] = 0; idx[2] < b.extents[2]; ++idx[2]) f(idx, flat++);
    }

    std::size_t in_elems() const { return static_cast<std::size_t>(in_box.elems()); }
    std::size_t out_elems() const { return static_cast<std::size_t>(out_box.elems()); }

    // The output: the box's elements, then a sentinel.
    void clear() { output.assign(out_elems() + 1, static_cast<T>(sentinel)); }

    // The output vector without its sentinel, for the container overloads.
    std::vector<T> sized_output() const { return std::vector<T>(out_elems(), static_cast<T>(sentinel)); }

    // A dense input vector (the box in C order), for the container overloads.
    std::vector<T> dense_input() const
    {
        std::vector<T> v;
        for_each(in_box, [&](const std::array<std::int64_t, 3>& idx, std::int64_t) {
            v.push_back(static_cast<T>(global(in.shape, in_box, idx)) + add);
        });
        return v;
    }

    // The field as pointers with their sizes (the input from its first box element).
    dr::fused_field pointers()
    {
        return dr::fused_field(input.data() + first, input.size() - static_cast<std::size_t>(first),
                               output.data(), out_elems());
    }

    // Whether `buf` holds the output (and, with `sentinel_after`, a sentinel after it).
    bool holds(const std::vector<T>& buf, bool sentinel_after = true) const
    {
        bool all = buf.size() >= out_elems();
        if (!all) return false;
        for_each(out_box, [&](const std::array<std::int64_t, 3>& idx, std::int64_t flat) {
            all = all && buf[flat] == static_cast<T>(global(out.shape, out_box, idx)) + add;
        });
        if (sentinel_after) all = all && buf[out_elems()] == static_cast<T>(sentinel);
        return all;
    }

    // Whether the input (halo included) is as it was made.
    bool same_input() const
    {
        std::vector<T> made(input.size(), static_cast<T>(sentinel));
        for_each(in_box, [&](const std::array<std::int64_t, 3>& idx, std::int64_t) {
            made[first + idx[0] * strides[0] + idx[1] * strides[1] + idx[2]] =
                static_cast<T>(global(in.shape, in_box, idx)) + add;
        });
        return made == input;
    }
};

const side vx{{7, 6, 5}, {dr::not_split, 0, 1}}, vy{{7, 6, 5}, {0, dr::not_split, 1}};
const side sy{{9, 4, 3}, {0, dr::not_split, 1}}, sx{{9, 4, 3}, {dr::not_split, 0, 1}};
const side ix{{5, 8, 3}, {dr::not_split, 0, 1}};

void check_velocity_and_scalar(dr::plan<double>& velocity, dr::plan<float>& scalar)
{
    std::vector<field<double>> v{{vx, vy, 0, 0}, {vx, vy, 0, 1}, {vx, vy, 0, 2}};
    field<float> t(sy, sx, 0, 3);
    dr::fused f(velocity, velocity, velocity, scalar);
    check(f.size() == 4 && static_cast<bool>(f), "four plans fused");
    for (int pass = 0; pass < 2; ++pass) {
        for (auto& c : v) c.clear();
        t.clear();
        f.execute({v[0].pointers(), v[1].pointers(), v[2].pointers(), t.pointers()});
        for (int i = 0; i < 3; ++i)
            check(v[i].holds(v[i].output) && v[i].same_input(),
                  "velocity component " + std::to_string(i) + ", pointers, pass " + std::to_string(pass));
        check(t.holds(t.output) && t.same_input(), "scalar, pointers");
    }
    // From containers: dense vectors, the output vectors exactly the box.
    const auto u = v[0].dense_input(), w = v[1].dense_input(), z = v[2].dense_input();
    const auto s = t.dense_input();
    auto uo = v[0].sized_output(), wo = v[1].sized_output(), zo = v[2].sized_output();
    auto so = t.sized_output();
    f.execute({{u, uo}, {w, wo}, {z, zo}, {s, so}});
    check(v[0].holds(uo, false) && v[1].holds(wo, false) && v[2].holds(zo, false) &&
              t.holds(so, false),
          "velocity and scalar, vectors");
#ifdef __cpp_lib_span
    std::vector<std::vector<double>> spanned(3, std::vector<double>(v[0].out_elems(), sentinel));
    std::vector<float> s_spanned(t.out_elems(), static_cast<float>(sentinel));
    f.execute({{std::span<const double>(u), std::span<double>(spanned[0])},
               {std::span<const double>(w), std::span<double>(spanned[1])},
               {std::span<const double>(z), std::span<double>(spanned[2])},
               {std::span<const float>(s), std::span<float>(s_spanned)}});
    check(v[0].holds(spanned[0], false) && v[1].holds(spanned[1], false) &&
              v[2].holds(spanned[2], false) && t.holds(s_spanned, false),
          "velocity and scalar, spans");
#endif
    // A list built at run time.
    std::vector<dr::fused_field> list;
    for (auto& c : v) {
        c.clear();
        list.push_back(c.pointers());
    }
    t.clear();
    list.push_back(t.pointers());
    f.execute(list);
    for (int i = 0; i < 3; ++i) check(v[i].holds(v[i].output), "a list of fields");
    check(t.holds(t.output), "a list of fields: the scalar");

    // The same plan three times: one batch in the round.
    dr::fused three({velocity, velocity, velocity});
    for (auto& c : v) c.clear();
    three.execute({v[0].pointers(), v[1].pointers(), v[2].pointers()});
    for (int i = 0; i < 3; ++i) check(v[i].holds(v[i].output), "the same plan three times");
}

void check_strided_and_still(dr::plan<double>& velocity, dr::plan<float>& scalar)
{
    field<double> h(vx, vy, 1, 0);
    field<float> t(sy, sx, 0, 1);
    field<std::int64_t> n(ix, ix, 0, 2);
    field<double> v(vx, vy, 0, 3);
    dr::plan<double> halo(vx.layout(), h.strides, vy.layout(), {}, MPI_COMM_WORLD);
    dr::plan<std::int64_t> still(ix.layout(), ix.layout(), MPI_COMM_WORLD);
    const dr_plan_stats stats = still.stats();
    check(stats.bytes_sent == 0 && stats.bytes_received == 0, "the identity plan sends nothing");
    dr::fused f(halo, scalar, still, velocity);
    for (int pass = 0; pass < 2; ++pass) {
        h.clear();
        t.clear();
        n.clear();
        v.clear();
        f.execute({h.pointers(), t.pointers(), n.pointers(), v.pointers()});
        check(h.holds(h.output) && h.same_input(), "strided: output, input and halo");
        check(t.holds(t.output) && t.same_input(), "strided with dense: the scalar");
        check(n.holds(n.output) && n.same_input(), "a plan that sends nothing");
        check(v.holds(v.output) && v.same_input(), "strided with dense: the velocity");
    }
}

void check_in_place(dr::plan<double>& velocity, dr::plan<float>& scalar)
{
    for (int who : {nranks - 1, -1}) {
        field<double> v(vx, vy, 0, 0);
        field<float> t(sy, sx, 0, 1);
        const bool here = who < 0 || who == rank;
        std::vector<double> buf = v.dense_input();
        buf.resize(std::max(v.in_elems(), v.out_elems()), sentinel);
        std::vector<float> sbuf = t.dense_input();
        sbuf.resize(std::max(t.in_elems(), t.out_elems()), static_cast<float>(sentinel));
        dr::fused f(velocity, scalar);
        if (here)
            f.execute({dr::fused_field::in_place(buf), dr::fused_field::in_place(sbuf)});
        else
            f.execute({v.pointers(), t.pointers()});
        const std::string name = who < 0 ? "in place everywhere" : "in place on the last rank";
        check(here ? v.holds(buf, false) && t.holds(sbuf, false) : v.holds(v.output) && t.holds(t.output),
              name);
    }
}

void check_kept_plans()
{
    field<double> v(vx, vy, 0, 0);
    field<float> t(sy, sx, 0, 1);
    dr::fused f;
    {
        dr::plan<double> velocity(vx.layout(), vy.layout(), MPI_COMM_WORLD);
        dr::plan<float> scalar(sy.layout(), sx.layout(), MPI_COMM_WORLD);
        f = dr::fused(velocity, scalar);
    } // the plans go first
    f.execute({v.pointers(), t.pointers()});
    check(v.holds(v.output) && t.holds(t.output), "plans destroyed before the fused object");
    dr::fused moved = std::move(f);
    check(!f && f.size() == 0 && moved.size() == 2, "a moved-from fused object is empty");
    check(status_of([&] { f.execute({v.pointers(), t.pointers()}); }) == DR_ERROR_NULL_POINTER,
          "an empty fused object");
    v.clear();
    moved.execute({v.pointers(), t.pointers()});
    check(v.holds(v.output), "the moved fused object executes");
}

void check_refusals(dr::plan<double>& velocity, dr::plan<float>& scalar)
{
    field<double> v(vx, vy, 0, 0), w(vx, vy, 0, 1);
    field<float> t(sy, sx, 0, 2);
    dr::fused f(velocity, velocity, scalar);
    const auto untouched = std::make_pair(v.output, t.output);
    check(status_of([&] { f.execute({v.pointers(), t.pointers()}); }) == DR_ERROR_INVALID_SHAPE,
          "two fields for three plans");
    check(status_of([&] {
              if (rank == 0)
                  f.execute({v.pointers(), t.pointers(), t.pointers()});
              else
                  f.execute({v.pointers(), w.pointers(), t.pointers()});
          }) == DR_ERROR_INVALID_DTYPE,
          "a float field for a double plan on rank 0");
    const bool last = rank == nranks - 1;
    const int any_short = [&] {
        int mine = last && v.out_elems() > 0, any = 0;
        MPI_Allreduce(&mine, &any, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
        return any;
    }();
    if (any_short) {
        const dr::fused_field shorter(v.input.data(), v.input.size(), v.output.data(),
                                      v.out_elems() - (last && v.out_elems() > 0));
        check(status_of([&] { f.execute({shorter, w.pointers(), t.pointers()}); }) ==
                  DR_ERROR_BUFFER_TOO_SMALL,
              "a short output on the last rank");
    }
    int any_output = 0, mine = v.out_elems() > 0;
    MPI_Allreduce(&mine, &any_output, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    if (any_output)
        check(status_of([&] { f.execute({v.pointers(), v.pointers(), t.pointers()}); }) ==
                  DR_ERROR_ALIASING,
              "two fields sharing an output");
    check(std::make_pair(v.output, t.output) == untouched, "nothing written by refused executions");
    if (nranks > 1)
        check(status_of([&] {
                  if (rank == 0)
                      dr::fused g(scalar, velocity);
                  else
                      dr::fused g(velocity, scalar);
              }) == DR_ERROR_INCONSISTENT_ARGUMENTS,
              "plans in another order on rank 0");
    MPI_Comm dup;
    MPI_Comm_dup(MPI_COMM_WORLD, &dup);
    {
        dr::plan<float> other(sy.layout(), sx.layout(), dup);
        check(status_of([&] { dr::fused g(velocity, other); }) == DR_ERROR_INVALID_COMMUNICATOR,
              "plans of two communicators");
    }
    MPI_Comm_free(&dup);
    check(status_of([&] { dr::fused g(std::vector<dr::fused_plan>{}); }) == DR_ERROR_INVALID_SHAPE,
          "no plans");
    // After the refusals it works.
    v.clear();
    w.clear();
    t.clear();
    f.execute({v.pointers(), w.pointers(), t.pointers()});
    check(v.holds(v.output) && w.holds(w.output) && t.holds(t.output), "after the refusals");
}

} // namespace

int main(int argc, char** argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &nranks);
    int dims[2] = {0, 0};
    MPI_Dims_create(nranks, 2, dims);
    grid = {dims[0], dims[1]};

    try {
        dr::plan<double> velocity(vx.layout(), vy.layout(), MPI_COMM_WORLD);
        dr::plan<float> scalar(sy.layout(), sx.layout(), MPI_COMM_WORLD);
        check(velocity.input_box().offsets == vx.box().offsets &&
                  velocity.output_box().extents == vy.box().extents,
              "the library's boxes are the oracle's");
        check_velocity_and_scalar(velocity, scalar);
        check_strided_and_still(velocity, scalar);
        check_in_place(velocity, scalar);
        check_kept_plans();
        check_refusals(velocity, scalar);
    } catch (const dr::error& e) {
        check(false, std::string("unexpected error: ") + e.what());
    }

    int total = 0;
    MPI_Allreduce(&failures, &total, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0)
        std::printf("%s: fused C++%ld, %d failed check(s) on %d rank(s)\n", total ? "FAILED" : "OK",
                    __cplusplus / 100 % 100, total, nranks);
    MPI_Finalize();
    return total ? 1 : 0;
}
