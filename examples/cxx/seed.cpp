// Seed example in C++ (examples/c/seed.c with distreshape.hpp): reshape a
// (10, N, 10) array split along dimension 1 into a (10, -1) = (10, 10*N) array
// split along dimension 1, over all ranks of MPI_COMM_WORLD (C order, dimensions
// counted from 0).
//
// Every element holds its global flat (row-major) index, so after the reshape
// each rank can check every element it received. Rank 0 prints the plan's
// description, its traffic and the timings.
//
//   mpiexec -n 4 ./seed_cxx [N]        (N defaults to 100000)
#include <distreshape.hpp>
#include <mpi.h>

#include <cinttypes>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <vector>

namespace dr = distreshape;

namespace {

// Global flat index of the local element number `i` (row-major) of a rank holding
// `rows` of dimension `split`.
std::int64_t global_index(const std::vector<std::int64_t>& gshape, std::size_t split, dr::slab rows,
                          std::int64_t i)
{
    std::int64_t index = 0, stride = 1;
    for (std::size_t d = gshape.size(); d-- > 0;) {
        const std::int64_t n = d == split ? rows.len : gshape[d];
        const std::int64_t coord = i % n + (d == split ? rows.offset : 0);
        i /= n;
        index += coord * stride;
        stride *= gshape[d];
    }
    return index;
}

// The elements of `out` (rows of dimension 1 of `gshape`) not holding their index.
std::int64_t count_wrong(const std::vector<double>& out, const std::vector<std::int64_t>& gshape,
                         dr::slab rows)
{
    std::int64_t wrong = 0;
    for (std::size_t i = 0; i < out.size(); ++i) {
        const std::int64_t index = global_index(gshape, 1, rows, static_cast<std::int64_t>(i));
        wrong += out[i] != static_cast<double>(index);
    }
    return wrong;
}

int run(int rank, int nranks, std::int64_t n)
{
    // Input: (10, n, 10) split along 1, balanced slabs of dimension 1.
    const std::vector<std::int64_t> gshape = {10, n, 10};
    const dr::slab rows = dr::balanced_slab(n, nranks, rank);
    std::vector<double> in(static_cast<std::size_t>(10 * rows.len * 10));
    for (std::size_t i = 0; i < in.size(); ++i)
        in[i] = static_cast<double>(global_index(gshape, 1, rows, static_cast<std::int64_t>(i)));

    // Plan the reshape to (10, -1) split along 1 (balanced output).
    double t0 = MPI_Wtime();
    dr::plan<double> plan(gshape, 1, MPI_COMM_WORLD, rows.len, {10, -1}, 1);
    const double t_plan = MPI_Wtime() - t0;

    // The plan tells each rank how much output it gets.
    const std::vector<std::int64_t> resolved = plan.output_shape();
    std::vector<double> out(plan.output_elems());

    MPI_Barrier(MPI_COMM_WORLD);
    t0 = MPI_Wtime();
    plan.execute(in, out);
    const double t_exec = MPI_Wtime() - t0;

    // Check every element against its global index in the new shape.
    const dr::slab new_rows = dr::balanced_slab(resolved[1], nranks, rank);
    std::int64_t errors = new_rows.len != plan.output_len();
    errors += count_wrong(out, resolved, new_rows);

    // The same reshape in one call, without keeping a plan: a vector of this rank's output.
    t0 = MPI_Wtime();
    const std::vector<double> once =
        dr::reshape(in, gshape, 1, MPI_COMM_WORLD, rows.len, {10, -1}, 1);
    const double t_oneshot = MPI_Wtime() - t0;
    errors += (once.size() != out.size()) + count_wrong(once, resolved, new_rows);

    double times[3] = {t_plan, t_exec, t_oneshot}, max_times[3];
    MPI_Reduce(times, max_times, 3, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
    std::int64_t total_errors = 0;
    MPI_Allreduce(&errors, &total_errors, 1, MPI_INT64_T, MPI_SUM, MPI_COMM_WORLD);

    if (rank == 0) {
        std::printf("distreshape %s (C++) on %d rank(s)\n", dr_version(), nranks);
        std::printf("(10, %" PRId64 ", 10) split 1 -> (10, %" PRId64 ") split 1\n", n, resolved[1]);
        std::printf("%s\n", plan.describe().c_str());
        std::printf("plan %.6f s, execute %.6f s, one-shot reshape %.6f s (max over ranks)\n",
                    max_times[0], max_times[1], max_times[2]);
        std::printf("%s: %" PRId64 " wrong element(s)\n", total_errors ? "FAILED" : "OK",
                    total_errors);
    }
    return total_errors ? 1 : 0;
}

} // namespace

int main(int argc, char** argv)
{
    MPI_Init(&argc, &argv);
    int rank, nranks;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &nranks);
    const std::int64_t n = argc > 1 ? std::atoll(argv[1]) : 100000;

    int status = 1;
    try {
        status = run(rank, nranks, n); // the plan is destroyed before MPI_Finalize
    } catch (const dr::error& e) {
        // Every distreshape call fails on every rank alike, so all ranks get here together.
        std::fprintf(stderr, "distreshape failed: %s\n", e.what());
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    MPI_Finalize();
    return status;
}
