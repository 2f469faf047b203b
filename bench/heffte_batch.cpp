/* Batches of fields (issue 36): three float64 fields of N^3 (N = 64 by default) moved from
 * x-pencils to y-pencils on the pencil grid of examples/batch_bench.rs, by heFFTe's
 * reshape3d (each algorithm batched, `apply(3, ...)`, and three `apply(1, ...)`) and by
 * DistReshape (one batch, three executions, the same plan fused three times, and one array
 * of shape (N, N, N, 3) with the trailing axis unsplit: PencilArrays' `extra_dims`).
 *
 * Build (heFFTe built with its FFTW backend against MPICH in HEFFTE_BUILD, sources in
 * HEFFTE_SRC; DistReshape after `cargo build --release`):
 *
 *   HEFFTE_SRC=/tmp/heffte-src HEFFTE_BUILD=/tmp/heffte-build
 *   mpicxx.mpich -O2 -std=c++17 bench/heffte_batch.cpp -o heffte_batch \
 *       -I$HEFFTE_SRC/include -I$HEFFTE_BUILD/include -Iinclude -L$HEFFTE_BUILD -lheffte \
 *       -Ltarget/release -ldistreshape -Wl,-rpath,$HEFFTE_BUILD -Wl,-rpath,$PWD/target/release
 *
 * Run: mpiexec.mpich -n P ./heffte_batch [REPEAT [WARMUP [N]]]   (defaults 200 5 64)
 *
 * The methods take turns execution by execution (the first WARMUP turns untimed), each
 * execution between barriers; a time is the median over the repeats of the max over the
 * ranks. heFFTe's batch holds the fields back to back in one allocation (its layout);
 * DistReshape's fields are separate allocations, except `extra_dims`, which interleaves
 * them. Every method's output is checked element by element (field f holds the global
 * C-order index plus f * 2^32). Rank 0 prints each median and its ratio to heFFTe's best
 * batch and to DistReshape's three executions. */
#include <mpi.h>

#include <algorithm>
#include <array>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "distreshape.h"
#include "heffte.h"

namespace {

constexpr int FIELDS = 3;
constexpr double FIELD_OFFSET = 4294967296.0;

struct Box {
    std::array<long, 3> offsets, extents;
    long count() const { return extents[0] * extents[1] * extents[2]; }
};

struct Method {
    std::string name;
    std::function<void()> run;
    std::function<bool()> right;
    std::vector<double> times;
};

double median(std::vector<double> v) {
    std::sort(v.begin(), v.end());
    size_t n = v.size();
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

void check(dr_status status, const char *what) {
    if (status != DR_SUCCESS) {
        std::fprintf(stderr, "%s: %s\n", what, dr_last_error_message());
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
}

/* The pencil grid [p / pc, pc], pc the largest divisor of p whose square is at most p. */
std::array<int32_t, 2> pencil_grid(int p) {
    int pc = 1;
    for (int d = 1; d * d <= p; ++d)
        if (p % d == 0) pc = d;
    return {p / pc, pc};
}

/* x- (axis 0 whole) or y-pencils (axis 1 whole) of `shape` (a fourth axis unsplit). */
dr_layout *pencils(bool y, const std::vector<int64_t> &shape, int p) {
    auto grid = pencil_grid(p);
    std::vector<int32_t> axis_grid = y ? std::vector<int32_t>{0, -1, 1} : std::vector<int32_t>{-1, 0, 1};
    if (shape.size() == 4) axis_grid.push_back(-1);
    dr_layout *layout = nullptr;
    check(dr_layout_create(int32_t(shape.size()), shape.data(), 2, grid.data(), axis_grid.data(), &layout),
          "dr_layout_create");
    return layout;
}

Box rank_box(const dr_layout *layout, int p, int r) {
    int64_t offsets[4], extents[4];
    check(dr_layout_rank_box(layout, p, r, offsets, extents), "dr_layout_rank_box");
    return {{offsets[0], offsets[1], offsets[2]}, {extents[0], extents[1], extents[2]}};
}

/* heFFTe's box of `b`: its index 0 is the contiguous axis (our axis 2), bounds inclusive. */
heffte::box3d<int> heffte_box(const Box &b) {
    return heffte::box3d<int>({int(b.offsets[2]), int(b.offsets[1]), int(b.offsets[0])},
                              {int(b.offsets[2] + b.extents[2] - 1), int(b.offsets[1] + b.extents[1] - 1),
                               int(b.offsets[0] + b.extents[0] - 1)});
}

/* Calls f(position in the box, global index) for every element of `b` in C order. */
template <class F>
void for_each(const Box &b, long n, F f) {
    long at = 0;
    for (long i = 0; i < b.extents[0]; ++i)
        for (long j = 0; j < b.extents[1]; ++j)
            for (long k = 0; k < b.extents[2]; ++k)
                f(at++, ((b.offsets[0] + i) * n + b.offsets[1] + j) * n + b.offsets[2] + k);
}

}  // namespace

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank, p;
    MPI_Comm comm = MPI_COMM_WORLD;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &p);
    int repeat = argc > 1 ? std::atoi(argv[1]) : 200;
    int warmup = argc > 2 ? std::atoi(argv[2]) : 5;
    long n = argc > 3 ? std::atol(argv[3]) : 64;

    std::vector<int64_t> shape = {n, n, n}, shape4 = {n, n, n, FIELDS};
    dr_layout *x = pencils(false, shape, p), *y = pencils(true, shape, p);
    dr_layout *x4 = pencils(false, shape4, p), *y4 = pencils(true, shape4, p);
    dr_plan *plan = nullptr, *plan4 = nullptr;
    check(dr_plan_create_layouts(DR_DTYPE_FLOAT64, x, y, comm, &plan), "dr_plan_create_layouts");
    check(dr_plan_create_layouts(DR_DTYPE_FLOAT64, x4, y4, comm, &plan4), "dr_plan_create_layouts");
    const dr_plan *three[FIELDS] = {plan, plan, plan};
    dr_fused *fused = nullptr;
    check(dr_fused_create(FIELDS, three, &fused), "dr_fused_create");

    std::vector<heffte::box3d<int>> in_boxes, out_boxes;
    for (int r = 0; r < p; ++r) {
        in_boxes.push_back(heffte_box(rank_box(x, p, r)));
        out_boxes.push_back(heffte_box(rank_box(y, p, r)));
    }
    Box in_box = rank_box(x, p, rank), out_box = rank_box(y, p, rank);
    long in_elems = in_box.count(), out_elems = out_box.count();

    /* heFFTe's batch: the fields back to back; DistReshape's: separate allocations. */
    std::vector<double> in_all(FIELDS * in_elems), out_all(FIELDS * out_elems);
    std::vector<std::vector<double>> ins(FIELDS, std::vector<double>(in_elems));
    std::vector<std::vector<double>> outs(FIELDS, std::vector<double>(out_elems));
    std::vector<double> in4(FIELDS * in_elems), out4(FIELDS * out_elems);
    for_each(in_box, n, [&](long at, long g) {
        for (int f = 0; f < FIELDS; ++f) {
            double v = double(g) + f * FIELD_OFFSET;
            in_all[f * in_elems + at] = ins[f][at] = in4[at * FIELDS + f] = v;
        }
    });
    const void *in_ptrs[FIELDS];
    void *out_ptrs[FIELDS];
    for (int f = 0; f < FIELDS; ++f) {
        in_ptrs[f] = ins[f].data();
        out_ptrs[f] = outs[f].data();
    }
    auto fields_right = [&](auto value_at) {
        bool right = true;
        for_each(out_box, n, [&](long at, long g) {
            for (int f = 0; f < FIELDS; ++f) right &= value_at(f, at) == double(g) + f * FIELD_OFFSET;
        });
        return right;
    };
    auto back_to_back = [&] { return fields_right([&](int f, long at) { return out_all[f * out_elems + at]; }); };
    auto separate = [&] { return fields_right([&](int f, long at) { return outs[f][at]; }); };
    auto interleaved = [&] { return fields_right([&](int f, long at) { return out4[at * FIELDS + f]; }); };

    using heffte::reshape_algorithm;
    using heffte::tag::cpu;
    std::vector<std::pair<std::string, std::unique_ptr<heffte::reshape3d_base<int>>>> shapers;
    shapers.emplace_back("heffte-a2av", heffte::make_reshape3d_alltoallv<cpu>(nullptr, in_boxes, out_boxes, false, comm));
    shapers.emplace_back("heffte-a2a", heffte::make_reshape3d_alltoall<cpu>(nullptr, in_boxes, out_boxes, false, comm));
    shapers.emplace_back("heffte-p2p", heffte::make_reshape3d_pointtopoint<cpu>(
                                           nullptr, in_boxes, out_boxes, reshape_algorithm::p2p, false, comm));
    shapers.emplace_back("heffte-p2p_plined", heffte::make_reshape3d_pointtopoint<cpu>(
                                                  nullptr, in_boxes, out_boxes, reshape_algorithm::p2p_plined, false, comm));
    std::vector<std::vector<double>> workspaces;
    for (auto &s : shapers) workspaces.emplace_back(FIELDS * s.second->size_workspace());

    std::vector<Method> methods;
    for (size_t k = 0; k < shapers.size(); ++k) {
        heffte::reshape3d_base<int> *shaper = shapers[k].second.get();
        double *workspace = workspaces[k].data();
        methods.push_back({shapers[k].first + " batch",
                           [&, shaper, workspace] { shaper->apply(FIELDS, in_all.data(), out_all.data(), workspace); },
                           back_to_back, {}});
        methods.push_back({shapers[k].first + " x3",
                           [&, shaper, workspace] {
                               for (int f = 0; f < FIELDS; ++f)
                                   shaper->apply(1, in_all.data() + f * in_elems, out_all.data() + f * out_elems,
                                                 workspace);
                           },
                           back_to_back, {}});
    }
    methods.push_back({"distreshape x3",
                       [&] {
                           for (int f = 0; f < FIELDS; ++f)
                               check(dr_plan_execute(plan, ins[f].data(), outs[f].data(), out_elems), "execute");
                       },
                       separate, {}});
    methods.push_back({"distreshape batch",
                       [&] { check(dr_plan_execute_batch(plan, FIELDS, in_ptrs, out_ptrs, out_elems), "batch"); },
                       separate, {}});
    methods.push_back({"distreshape fused", [&] { check(dr_fused_execute(fused, in_ptrs, out_ptrs), "fused"); },
                       separate, {}});
    methods.push_back({"distreshape extra_dims",
                       [&] { check(dr_plan_execute(plan4, in4.data(), out4.data(), FIELDS * out_elems), "extra_dims"); },
                       interleaved, {}});

    for (auto &m : methods) {
        std::fill(out_all.begin(), out_all.end(), -1.0);
        for (auto &o : outs) std::fill(o.begin(), o.end(), -1.0);
        std::fill(out4.begin(), out4.end(), -1.0);
        m.run();
        int wrong = !m.right(), any = 0;
        MPI_Allreduce(&wrong, &any, 1, MPI_INT, MPI_MAX, comm);
        if (any) {
            if (rank == 0) std::fprintf(stderr, "%s: wrong output\n", m.name.c_str());
            MPI_Abort(comm, 1);
        }
    }
    for (int i = 0; i < warmup + repeat; ++i)
        for (auto &m : methods) {
            MPI_Barrier(comm);
            double t0 = MPI_Wtime();
            m.run();
            if (i >= warmup) m.times.push_back(MPI_Wtime() - t0);
        }
    std::vector<double> medians;
    for (auto &m : methods) {
        MPI_Allreduce(MPI_IN_PLACE, m.times.data(), repeat, MPI_DOUBLE, MPI_MAX, comm);
        medians.push_back(median(m.times));
    }
    if (rank == 0) {
        double best = 1e300, dr_three = 0;
        std::string best_name;
        for (size_t k = 0; k < methods.size(); ++k) {
            bool heffte_batch = methods[k].name.rfind("heffte", 0) == 0 &&
                                methods[k].name.find(" batch") != std::string::npos;
            if (heffte_batch && medians[k] < best) {
                best = medians[k];
                best_name = methods[k].name;
            }
            if (methods[k].name == "distreshape x3") dr_three = medians[k];
        }
        std::printf("# %d fields of %ld^3 float64, x -> y pencils, P = %d, median of %d interleaved after %d warm-up\n",
                    FIELDS, n, p, repeat, warmup);
        std::printf("%-26s %10s %14s %10s\n", "method", "median ms", "/heffte batch", "/dr x3");
        for (size_t k = 0; k < methods.size(); ++k)
            std::printf("%-26s %10.4f %14.2f %10.2f\n", methods[k].name.c_str(), medians[k] * 1e3, medians[k] / best,
                        medians[k] / dr_three);
        std::printf("# heffte best batch: %s; distreshape %s\n", best_name.c_str(), dr_version());
    }
    shapers.clear();
    dr_fused_destroy(fused);
    dr_plan_destroy(plan);
    dr_plan_destroy(plan4);
    for (dr_layout *l : {x, y, x4, y4}) dr_layout_destroy(l);
    MPI_Finalize();
    return 0;
}
