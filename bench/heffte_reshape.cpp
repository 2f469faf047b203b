/* heFFTe's reshape3d against a hand-written exchange (and optionally DistReshape) on the
 * latency-bound case of examples/bench.rs (`small_latency`): an N^3 float64 array (N = 64
 * by default) in balanced slabs of axis 0 reshaped into balanced slabs of axis 2
 * (docs/src/performance/analysis.md, "Latency-bound").
 *
 * Build (heFFTe built with its FFTW backend against MPICH in HEFFTE_BUILD, sources in
 * HEFFTE_SRC):
 *
 *   HEFFTE_SRC=/tmp/heffte-src HEFFTE_BUILD=/tmp/heffte-build
 *   mpicxx.mpich -O2 -std=c++17 bench/heffte_reshape.cpp -o heffte_reshape \
 *       -I$HEFFTE_SRC/include -I$HEFFTE_BUILD/include -L$HEFFTE_BUILD -lheffte \
 *       -Wl,-rpath,$HEFFTE_BUILD
 *
 * With DistReshape in the same process (its C ABI, after `cargo build --release`):
 *
 *   mpicxx.mpich -O2 -std=c++17 -DWITH_DISTRESHAPE bench/heffte_reshape.cpp -o heffte_reshape \
 *       -I$HEFFTE_SRC/include -I$HEFFTE_BUILD/include -Iinclude -L$HEFFTE_BUILD -lheffte \
 *       -Ltarget/release -ldistreshape -Wl,-rpath,$HEFFTE_BUILD -Wl,-rpath,$PWD/target/release
 *
 * Run: mpiexec.mpich -n P ./heffte_reshape [REPEAT [WARMUP [N [blocks|interleaved]]]]
 *      (defaults 500 5 64 blocks)
 *
 * Methods, each timed the way examples/bench.rs times an execution (warm-up, then each
 * repeat between barriers, the max over ranks per repeat, the median over repeats), in
 * one of two orders. `blocks` (default): 10 rounds, in each of which every method runs
 * WARMUP untimed and REPEAT/10 timed executions back to back, as a plan runs in a time
 * loop. `interleaved`: the methods take turns execution by execution (the first WARMUP
 * turns untimed), as examples/bench.rs interleaves an execution with its baselines, so
 * that each finds its buffers partly evicted by the others (closer to an application
 * that computes between reshapes). Both let the methods share the machine's drifting
 * noise. The methods:
 *   contiguous : memcpy of the bytes that stay + MPI_Alltoallv of the bytes that move,
 *                from and into contiguous buffers (examples/bench.rs's baseline)
 *   hand       : what a user writes by hand: pack the runs sent to each peer, one
 *                MPI_Alltoallv received straight into the output (each peer's rows are
 *                contiguous there), and the copy of the kept runs
 *   heffte-*   : heFFTe's reshape3d with MPI_Alltoallv, MPI_Alltoall (padded),
 *                point-to-point, and pipelined point-to-point
 *   distreshape: dr_plan_execute (with -DWITH_DISTRESHAPE)
 * Every method's output is checked element by element (value = global C-order index).
 * Rank 0 prints each median and its ratio to the contiguous baseline, to heFFTe's best
 * and to the hand-written exchange. */
#include <mpi.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "heffte.h"
#ifdef WITH_DISTRESHAPE
#include "distreshape.h"
#endif

namespace {

struct Slab {
    long len, offset;
};

Slab balanced(long extent, int nranks, int rank) {
    long base = extent / nranks, rem = extent % nranks;
    return {base + (rank < rem ? 1 : 0), rank * base + std::min<long>(rank, rem)};
}

struct Method {
    std::string name;
    std::function<void()> run;
    std::vector<double> times;
};

double median(std::vector<double> v) {
    std::sort(v.begin(), v.end());
    size_t n = v.size();
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

}  // namespace

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank, nranks;
    MPI_Comm comm = MPI_COMM_WORLD;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &nranks);
    int repeat = argc > 1 ? std::atoi(argv[1]) : 500;
    int warmup = argc > 2 ? std::atoi(argv[2]) : 5;
    long n = argc > 3 ? std::atol(argv[3]) : 64;
    bool interleaved = argc > 4 && std::string(argv[4]) == "interleaved";

    /* Input: rows [a0, a0 + alen) of axis 0, stored (a - a0, b, c); output: columns
     * [c0, c0 + clen) of axis 2, stored (a, b, c - c0). */
    std::vector<Slab> in_slab(nranks), out_slab(nranks);
    for (int r = 0; r < nranks; ++r) {
        in_slab[r] = balanced(n, nranks, r);
        out_slab[r] = balanced(n, nranks, r);
    }
    Slab mine_in = in_slab[rank], mine_out = out_slab[rank];
    long in_elems = mine_in.len * n * n, out_elems = n * n * mine_out.len;
    std::vector<double> in(in_elems), out(out_elems);
    for (long a = 0; a < mine_in.len; ++a)
        for (long b = 0; b < n; ++b)
            for (long c = 0; c < n; ++c)
                in[(a * n + b) * n + c] = double(((mine_in.offset + a) * n + b) * n + c);

    /* heFFTe's index 0 is the contiguous one: (c, b, a) in its boxes, bounds inclusive. */
    std::vector<heffte::box3d<int>> in_boxes, out_boxes;
    for (int r = 0; r < nranks; ++r) {
        in_boxes.push_back(heffte::box3d<int>(
            {0, 0, int(in_slab[r].offset)},
            {int(n - 1), int(n - 1), int(in_slab[r].offset + in_slab[r].len - 1)}));
        out_boxes.push_back(heffte::box3d<int>(
            {int(out_slab[r].offset), 0, 0},
            {int(out_slab[r].offset + out_slab[r].len - 1), int(n - 1), int(n - 1)}));
    }
    using heffte::reshape_algorithm;
    using heffte::tag::cpu;
    std::vector<std::pair<std::string, std::unique_ptr<heffte::reshape3d_base<int>>>> shapers;
    shapers.emplace_back("heffte-a2av", heffte::make_reshape3d_alltoallv<cpu>(nullptr, in_boxes, out_boxes, false, comm));
    shapers.emplace_back("heffte-a2a", heffte::make_reshape3d_alltoall<cpu>(nullptr, in_boxes, out_boxes, false, comm));
    shapers.emplace_back("heffte-p2p", heffte::make_reshape3d_pointtopoint<cpu>(
                                           nullptr, in_boxes, out_boxes, reshape_algorithm::p2p, false, comm));
    shapers.emplace_back("heffte-p2p_plined", heffte::make_reshape3d_pointtopoint<cpu>(
                                                  nullptr, in_boxes, out_boxes, reshape_algorithm::p2p_plined, false, comm));
    /* Each reshape its own workspace, as each of an application's plans has. */
    std::vector<std::vector<double>> workspaces;
    for (auto &s : shapers) workspaces.emplace_back(s.second->size_workspace());

    /* The hand-written exchange: per-peer counts and displacements of the packed send
     * buffer, and of the output, where peer q's rows [a0_q, a0_q + alen_q) are contiguous. */
    std::vector<int> send_counts(nranks, 0), send_displs(nranks, 0), recv_counts(nranks, 0), recv_displs(nranks, 0);
    long packed_elems = 0;
    for (int q = 0; q < nranks; ++q) {
        if (q == rank) continue;
        send_displs[q] = int(packed_elems);
        send_counts[q] = int(mine_in.len * n * out_slab[q].len);
        packed_elems += send_counts[q];
        recv_displs[q] = int(in_slab[q].offset * n * mine_out.len);
        recv_counts[q] = int(in_slab[q].len * n * mine_out.len);
    }
    long kept_elems = mine_in.len * n * mine_out.len;
    std::vector<double> packed(std::max(packed_elems, 1L)), contiguous_out(std::max(packed_elems, 1L) + kept_elems);
    std::vector<int> contiguous_recv_displs(nranks, 0);
    for (int q = 0, at = 0; q < nranks; ++q) {
        contiguous_recv_displs[q] = at;
        at += recv_counts[q];
    }

    std::vector<Method> methods;
    methods.push_back({"contiguous", [&] {
                           std::memcpy(contiguous_out.data() + packed_elems, in.data(), kept_elems * sizeof(double));
                           MPI_Alltoallv(in.data(), send_counts.data(), send_displs.data(), MPI_DOUBLE,
                                         contiguous_out.data(), recv_counts.data(), contiguous_recv_displs.data(),
                                         MPI_DOUBLE, comm);
                       }, {}});
    methods.push_back({"hand", [&] {
                           for (int q = 0; q < nranks; ++q) {
                               if (q == rank) continue;
                               double *to = packed.data() + send_displs[q];
                               long run = out_slab[q].len;
                               for (long ab = 0; ab < mine_in.len * n; ++ab, to += run)
                                   std::memcpy(to, in.data() + ab * n + out_slab[q].offset, run * sizeof(double));
                           }
                           MPI_Alltoallv(packed.data(), send_counts.data(), send_displs.data(), MPI_DOUBLE,
                                         out.data(), recv_counts.data(), recv_displs.data(), MPI_DOUBLE, comm);
                           long run = mine_out.len;
                           double *to = out.data() + mine_in.offset * n * run;
                           for (long ab = 0; ab < mine_in.len * n; ++ab, to += run)
                               std::memcpy(to, in.data() + ab * n + mine_out.offset, run * sizeof(double));
                       }, {}});
    for (size_t k = 0; k < shapers.size(); ++k) {
        heffte::reshape3d_base<int> *shaper = shapers[k].second.get();
        double *workspace = workspaces[k].data();
        methods.push_back({shapers[k].first, [&, shaper, workspace] { shaper->apply(1, in.data(), out.data(), workspace); }, {}});
    }
#ifdef WITH_DISTRESHAPE
    int64_t gshape[3] = {n, n, n};
    dr_plan *plan = nullptr;
    if (dr_plan_create(DR_DTYPE_FLOAT64, 3, gshape, 0, comm, mine_in.len, 3, gshape, 2, mine_out.len, &plan) != DR_SUCCESS) {
        std::fprintf(stderr, "rank %d: dr_plan_create failed\n", rank);
        MPI_Abort(comm, 1);
    }
    methods.push_back({"distreshape", [&] { dr_plan_execute(plan, in.data(), out.data(), out_elems); }, {}});
#endif

    /* Every method's output, checked element by element. */
    for (auto &m : methods) {
        if (m.name == "contiguous") continue;
        std::fill(out.begin(), out.end(), -1.0);
        m.run();
        long wrong = 0;
        for (long a = 0; a < n; ++a)
            for (long b = 0; b < n; ++b)
                for (long c = 0; c < mine_out.len; ++c)
                    wrong += out[(a * n + b) * mine_out.len + c] != double((a * n + b) * n + mine_out.offset + c);
        long total = 0;
        MPI_Allreduce(&wrong, &total, 1, MPI_LONG, MPI_SUM, comm);
        if (total != 0) {
            if (rank == 0) std::fprintf(stderr, "%s: %ld wrong elements\n", m.name.c_str(), total);
            MPI_Abort(comm, 1);
        }
    }

    /* One execution between barriers, its time kept unless it is a warm-up. */
    auto time_one = [&](Method &m, bool keep) {
        MPI_Barrier(comm);
        double t0 = MPI_Wtime();
        m.run();
        double dt = MPI_Wtime() - t0;
        if (keep) m.times.push_back(dt);
    };
    if (interleaved) {
        /* The methods take turns execution by execution. */
        for (int i = 0; i < warmup + repeat; ++i)
            for (auto &m : methods) time_one(m, i >= warmup);
    } else {
        /* 10 rounds; in each, every method runs its warm-up, then a block of timed
         * executions back to back. */
        int rounds = 10, per_round = (repeat + rounds - 1) / rounds;
        repeat = rounds * per_round;
        for (int round = 0; round < rounds; ++round)
            for (auto &m : methods)
                for (int i = 0; i < warmup + per_round; ++i) time_one(m, i >= warmup);
    }
    std::vector<double> medians;
    for (auto &m : methods) {
        MPI_Allreduce(MPI_IN_PLACE, m.times.data(), repeat, MPI_DOUBLE, MPI_MAX, comm);
        medians.push_back(median(m.times));
    }

    if (rank == 0) {
        double contiguous = medians[0], hand = medians[1], best = 1e300;
        std::string best_name;
        for (size_t k = 0; k < methods.size(); ++k)
            if (methods[k].name.rfind("heffte", 0) == 0 && medians[k] < best) {
                best = medians[k];
                best_name = methods[k].name;
            }
        std::printf("# %ld^3 float64, split 0 -> 2, P = %d, median of %d, %s after %d warm-up\n", n,
                    nranks, repeat, interleaved ? "interleaved" : "in 10 rounds of blocks", warmup);
        std::printf("%-18s %10s %10s %12s %9s\n", "method", "median ms", "/contig", "/heffte best", "/hand");
        for (size_t k = 0; k < methods.size(); ++k)
            std::printf("%-18s %10.4f %10.2f %12.2f %9.2f\n", methods[k].name.c_str(), medians[k] * 1e3,
                        medians[k] / contiguous, medians[k] / best, medians[k] / hand);
        std::printf("# heffte best: %s\n", best_name.c_str());
#ifdef WITH_DISTRESHAPE
        std::printf("# distreshape %s\n", dr_version());
#endif
    }
#ifdef WITH_DISTRESHAPE
    dr_plan_destroy(plan);
#endif
    shapers.clear();
    MPI_Finalize();
    return 0;
}
