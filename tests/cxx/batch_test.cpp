// Batches in the C++ interface (plan<T>::execute_batch, execute_batch_in_place,
// execute_batch_begin), at 1-4 ranks, built as C++17 and C++20 (the spans of
// spans too):
//  - a (37, 5) array split along axis 0 reshaped to (5, 37) split along axis 1,
//    field f holding the global C-order indices plus f * field_offset: k = 3 and
//    k = 1 through vectors of pointers, vectors of vectors and (C++20) spans of
//    spans, every element of every field checked, a sentinel after each output
//    untouched, the inputs unchanged;
//  - in place (vectors of pointers to buffers holding both sides);
//  - begin / wait, the vectors of pointers gone before the wait;
//  - a strided plan: x-pencils of a (6, 5, 4) array inside a halo of 1 to
//    y-pencils stored inside padding, 3 fields, every box element and every
//    halo and padding sentinel checked;
//  - refusals with their status on every rank alike: a k that differs on rank
//    0 (DR_ERROR_INCONSISTENT_ARGUMENTS), no fields and in / out of different
//    counts (DR_ERROR_INVALID_SHAPE), a short input or output field on the
//    last rank (DR_ERROR_BUFFER_TOO_SMALL), two fields sharing an output
//    (DR_ERROR_ALIASING); nothing written.
#include <distreshape.hpp>
#include <mpi.h>

#include "checks.hpp"

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

namespace dr = distreshape;

namespace {

using ivec = std::vector<std::int64_t>;
using fields = std::vector<std::vector<double>>;
constexpr std::int64_t rows = 37, cols = 5;
constexpr double field_offset = 1e6;
constexpr double sentinel = -7.0;

// The (37, 5) -> (5, 37) plan and this rank's slabs.
struct slabs {
    dr::slab in, out;
    dr::plan<double> plan;

    slabs()
        : in(dr::balanced_slab(rows, nranks, rank)), out(dr::balanced_slab(rows, nranks, rank)),
          plan({rows, cols}, 0, MPI_COMM_WORLD, in.len, {cols, rows}, 1)
    {
    }

    std::size_t in_elems() const { return static_cast<std::size_t>(in.len * cols); }
    std::size_t out_elems() const { return static_cast<std::size_t>(out.len * cols); }

    // Field f's input, `room` elements (the input, then sentinels).
    std::vector<double> input(int f, std::size_t room) const
    {
        std::vector<double> v(room, sentinel);
        for (std::size_t e = 0; e < in_elems(); ++e)
            v[e] = static_cast<double>(in.offset * cols + static_cast<std::int64_t>(e)) +
                   f * field_offset;
        return v;
    }

    // `k` inputs of `room` elements each.
    fields inputs(int k, std::size_t room) const
    {
        fields v;
        for (int f = 0; f < k; ++f) v.push_back(input(f, room));
        return v;
    }

    // Whether `buf` holds field f's output in its first out_elems() elements
    // and sentinels in the rest.
    bool holds_output(const std::vector<double>& buf, int f) const
    {
        bool all = true;
        for (std::int64_t c = 0; c < cols; ++c)
            for (std::int64_t r = 0; r < out.len; ++r)
                all = all && buf[c * out.len + r] ==
                                 static_cast<double>(c * rows + out.offset + r) + f * field_offset;
        for (std::size_t e = out_elems(); e < buf.size(); ++e) all = all && buf[e] == sentinel;
        return all;
    }

    // Every field of `outs` holds its output (`what` names the case).
    void check_outputs(const fields& outs, const std::string& what) const
    {
        for (std::size_t f = 0; f < outs.size(); ++f)
            check(holds_output(outs[f], static_cast<int>(f)),
                  what + ": field " + std::to_string(f));
    }
};

// Pointers to the fields' first elements.
std::vector<const double*> read_pointers(const fields& v)
{
    std::vector<const double*> p;
    for (const auto& f : v) p.push_back(f.data());
    return p;
}

std::vector<double*> write_pointers(fields& v)
{
    std::vector<double*> p;
    for (auto& f : v) p.push_back(f.data());
    return p;
}

void check_out_of_place(const slabs& s, dr::plan<double>& p)
{
    for (int k : {3, 1}) {
        const std::string name = "k = " + std::to_string(k);
        const fields in = s.inputs(k, s.in_elems());
        fields out(k, std::vector<double>(s.out_elems() + 1, sentinel));
        p.execute_batch(read_pointers(in), write_pointers(out), s.out_elems());
        s.check_outputs(out, name + ", pointers");
        check(in == s.inputs(k, s.in_elems()), name + ": inputs unchanged");

        fields sized(k, std::vector<double>(s.out_elems(), sentinel));
        p.execute_batch(in, sized);
        s.check_outputs(sized, name + ", vectors");
#ifdef __cpp_lib_span
        fields spanned(k, std::vector<double>(s.out_elems() + 1, sentinel));
        std::vector<std::span<const double>> in_spans(in.begin(), in.end());
        std::vector<std::span<double>> out_spans;
        for (auto& f : spanned) out_spans.emplace_back(f.data(), s.out_elems());
        p.execute_batch(in_spans, out_spans);
        s.check_outputs(spanned, name + ", spans");
#endif
    }
}

void check_in_place(const slabs& s, dr::plan<double>& p)
{
    const std::size_t room = std::max(s.in_elems(), s.out_elems());
    fields bufs = s.inputs(3, room + 1);
    p.execute_batch_in_place(write_pointers(bufs), room);
    for (auto& b : bufs) {
        check(b[room] == sentinel, "in place: sentinel past the buffer");
        b.resize(s.out_elems() + 1);
        b.back() = sentinel; // elements past the output are the plan's to use in place
    }
    s.check_outputs(bufs, "in place");
}

void check_begin(const slabs& s, dr::plan<double>& p)
{
    const fields in = s.inputs(3, s.in_elems());
    fields out(3, std::vector<double>(s.out_elems() + 1, sentinel));
    dr::request r;
    {
        const auto ins = read_pointers(in);
        const auto outs = write_pointers(out);
        r = p.execute_batch_begin(ins, outs, s.out_elems());
    } // the vectors of pointers go before the wait
    while (!r.test()) {
    }
    check(!r.pending(), "begin: complete after test");
    s.check_outputs(out, "begin / test");

    fields sized(3, std::vector<double>(s.out_elems(), sentinel));
    dr::request again = p.execute_batch_begin(in, sized);
    again.wait();
    s.check_outputs(sized, "begin / wait, vectors");
}

void check_refusals(const slabs& s, dr::plan<double>& p)
{
    const fields in = s.inputs(3, s.in_elems());
    fields out(3, std::vector<double>(s.out_elems(), sentinel));
    const fields untouched = out;
    auto ins = read_pointers(in);
    auto outs = write_pointers(out);
    const std::size_t cap = s.out_elems();
    const bool last = rank == nranks - 1;

    if (nranks > 1) {
        const std::vector<const double*> fewer_in(ins.begin(), ins.end() - (rank == 0));
        const std::vector<double*> fewer_out(outs.begin(), outs.end() - (rank == 0));
        check(status_of([&] { p.execute_batch(fewer_in, fewer_out, cap); }) ==
                  DR_ERROR_INCONSISTENT_ARGUMENTS,
              "a k differing on rank 0");
        check(status_of([&] { dr::request r = p.execute_batch_begin(fewer_in, fewer_out, cap); }) ==
                  DR_ERROR_INCONSISTENT_ARGUMENTS,
              "a k differing on rank 0 (begin)");
    }
    check(status_of([&] { p.execute_batch({}, {}, cap); }) == DR_ERROR_INVALID_SHAPE, "k = 0");
    const std::vector<double*> two_out(outs.begin(), outs.end() - 1);
    check(status_of([&] { p.execute_batch(ins, two_out, cap); }) == DR_ERROR_INVALID_SHAPE,
          "in and out of different counts");

    // Every rank holds rows of both sides (37 rows over at most 4 ranks).
    fields short_in = in;
    if (last) short_in[2].pop_back();
    check(status_of([&] { p.execute_batch(short_in, out); }) == DR_ERROR_BUFFER_TOO_SMALL,
          "a short input field on the last rank");
    fields short_out = out;
    if (last) short_out[1].pop_back();
    check(status_of([&] { p.execute_batch(in, short_out); }) == DR_ERROR_BUFFER_TOO_SMALL,
          "a short output field on the last rank");
    check(status_of([&] { dr::request r = p.execute_batch_begin(in, short_out); }) ==
              DR_ERROR_BUFFER_TOO_SMALL,
          "a short output field on the last rank (begin)");

    std::vector<double*> shared = outs;
    shared[1] = shared[0];
    check(status_of([&] { p.execute_batch(ins, shared, cap); }) == DR_ERROR_ALIASING,
          "fields sharing an output");
    check(out == untouched, "nothing written by the refused batches");
}

// The global C-order index of box element (i, j, k) of the box at `offsets` in
// a (6, 5, 4) array.
double global(const ivec& offsets, std::int64_t i, std::int64_t j, std::int64_t k)
{
    return static_cast<double>(((offsets[0] + i) * 5 + offsets[1] + j) * 4 + offsets[2] + k);
}

// A box stored at `strides` from `first` in `data`, every other element a sentinel.
struct padded {
    std::vector<double> data;
    std::int64_t first;
    ivec box, strides;

    std::int64_t at(std::int64_t i, std::int64_t j, std::int64_t k) const
    {
        return first + i * strides[0] + j * strides[1] + k * strides[2];
    }

    // Every box element is global(offsets, ...) + shift and every other a sentinel.
    bool holds(const ivec& offsets, double shift) const
    {
        std::vector<char> in_box(data.size(), 0);
        bool all = true;
        for (std::int64_t i = 0; i < box[0]; ++i)
            for (std::int64_t j = 0; j < box[1]; ++j)
                for (std::int64_t k = 0; k < box[2]; ++k) {
                    in_box[at(i, j, k)] = 1;
                    all = all && data[at(i, j, k)] == global(offsets, i, j, k) + shift;
                }
        for (std::size_t e = 0; e < data.size(); ++e)
            all = all && (in_box[e] || data[e] == sentinel);
        return all;
    }
};

void check_strided()
{
    int dims[2] = {0, 0};
    MPI_Dims_create(nranks, 2, dims);
    const std::vector<int> grid{dims[0], dims[1]};
    const dr::layout x({6, 5, 4}, grid, {dr::not_split, 0, 1});
    const dr::layout y({6, 5, 4}, grid, {0, dr::not_split, 1});
    const dr::box ib = dr::plan<double>(x, y, MPI_COMM_WORLD).input_box();
    const dr::box ob = dr::plan<double>(x, y, MPI_COMM_WORLD).output_box();
    const ivec& e = ib.extents;
    const ivec hs{(e[1] + 2) * (e[2] + 2), e[2] + 2, 1};
    const ivec ps{(ob.extents[1] + 1) * (ob.extents[2] + 1), ob.extents[2] + 1, 1};
    std::vector<padded> in, out;
    for (int f = 0; f < 3; ++f) {
        padded h{std::vector<double>((e[0] + 2) * hs[0], sentinel), hs[0] + hs[1] + hs[2], e, hs};
        for (std::int64_t i = 0; i < e[0]; ++i)
            for (std::int64_t j = 0; j < e[1]; ++j)
                for (std::int64_t k = 0; k < e[2]; ++k)
                    h.data[h.at(i, j, k)] = global(ib.offsets, i, j, k) + f * field_offset;
        in.push_back(h);
        out.push_back({std::vector<double>((ob.extents[0] + 1) * ps[0], sentinel), 0, ob.extents, ps});
    }
    dr::plan<double> p(x, hs, y, ps, MPI_COMM_WORLD);
    std::vector<const double*> ins;
    std::vector<double*> outs;
    for (int f = 0; f < 3; ++f) {
        ins.push_back(in[f].data.data() + in[f].first);
        outs.push_back(out[f].data.data());
    }
    p.execute_batch(ins, outs, out[0].data.size());
    for (int f = 0; f < 3; ++f) {
        check(out[f].holds(ob.offsets, f * field_offset),
              "strided: field " + std::to_string(f) + " (box and padding)");
        check(in[f].holds(ib.offsets, f * field_offset),
              "strided: input " + std::to_string(f) + " unchanged (box and halo)");
    }
}

} // namespace

int main(int argc, char** argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &nranks);

    try {
        slabs s;
        check_out_of_place(s, s.plan);
        check_in_place(s, s.plan);
        check_begin(s, s.plan);
        check_refusals(s, s.plan);
        check_strided();
    } catch (const dr::error& e) {
        check(false, std::string("unexpected error: ") + e.what());
    }

    int total = 0;
    MPI_Allreduce(&failures, &total, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0)
        std::printf("%s: batches C++%ld, %d failed check(s) on %d rank(s)\n",
                    total ? "FAILED" : "OK", __cplusplus / 100 % 100, total, nranks);
    MPI_Finalize();
    return total ? 1 : 0;
}
