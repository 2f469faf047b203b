// The C++ interface (include/distreshape.hpp), at 1-4 ranks, built as C++17 and
// as C++20 (where the std::span overloads are tested too):
//  - every element type, through every execute overload (pointer, vector, span,
//    out of place and in place) on split changes, the local path, not split input
//    and output, explicit target lengths and a reshape that moves nothing, and
//    through every one-shot reshape (every case for double, the split change for
//    the others); arrays hold their global flat index (a hash bit for bool) and
//    EVERY output element on every rank is checked;
//  - the queries (input_elems, input_slab, output_shape, output_len, output_slab,
//    output_elems, stats, describe) against the layouts and the C API;
//  - plans with options (tiny limits on every case, a knob out of range on one rank);
//  - move semantics: moved-from plans are empty, moved-to plans work, plans in a
//    std::vector;
//  - bad input on one rank (the last), a failed allocation in reshape: every rank
//    throws distreshape::error with the same status (but where the C API reports
//    on the faulty rank only), and the message names the value; a correct call
//    still works.
#include <distreshape.hpp>
#include <mpi.h>

#include <algorithm>
#include <complex>
#include <cstdint>
#include <cstdio>
#include <memory>
#include <numeric>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <vector>

#if __cplusplus > 201703L && !defined(__cpp_lib_span)
#error "a C++20 build without std::span would leave the span overloads untested"
#endif

namespace dr = distreshape;

namespace {

int rank, nranks, bad_rank;
int failures;

void check(bool ok, const std::string& what)
{
    if (!ok) {
        std::printf("rank %d: FAIL %s\n", rank, what.c_str());
        failures++;
    }
}

// Compile-time checks: the element types and their dtypes, the constants, a
// move-only plan.
static_assert(dr::dtype_of<std::int8_t>() == DR_DTYPE_INT8);
static_assert(dr::dtype_of<std::int16_t>() == DR_DTYPE_INT16);
static_assert(dr::dtype_of<std::int32_t>() == DR_DTYPE_INT32);
static_assert(dr::dtype_of<std::int64_t>() == DR_DTYPE_INT64);
static_assert(dr::dtype_of<long long>() == DR_DTYPE_INT64);
static_assert(dr::dtype_of<std::uint8_t>() == DR_DTYPE_UINT8);
static_assert(dr::dtype_of<std::uint16_t>() == DR_DTYPE_UINT16);
static_assert(dr::dtype_of<std::uint32_t>() == DR_DTYPE_UINT32);
static_assert(dr::dtype_of<std::uint64_t>() == DR_DTYPE_UINT64);
static_assert(dr::dtype_of<unsigned long long>() == DR_DTYPE_UINT64);
static_assert(dr::dtype_of<float>() == DR_DTYPE_FLOAT32);
static_assert(dr::dtype_of<double>() == DR_DTYPE_FLOAT64);
static_assert(dr::dtype_of<std::complex<float>>() == DR_DTYPE_COMPLEX64);
static_assert(dr::dtype_of<std::complex<double>>() == DR_DTYPE_COMPLEX128);
static_assert(dr::dtype_of<bool>() == DR_DTYPE_BOOL);
static_assert(dr::plan<double>::dtype == DR_DTYPE_FLOAT64);
static_assert(!dr::is_element_v<char> && !dr::is_element_v<long double> &&
              !dr::is_element_v<const double> && !dr::is_element_v<std::complex<long double>>);
static_assert(dr::not_split == DR_SPLIT_NONE && dr::not_split == -1 && dr::balanced == -1);
static_assert(!std::is_copy_constructible_v<dr::plan<double>> &&
              !std::is_copy_assignable_v<dr::plan<double>>);
static_assert(std::is_nothrow_move_constructible_v<dr::plan<double>> &&
              std::is_nothrow_move_assignable_v<dr::plan<double>>);
static_assert(std::is_base_of_v<std::runtime_error, dr::error>);

// One side of a reshape: the (resolved) global shape, the split axis and every
// rank's rows along it (empty when not split).
struct side {
    std::vector<std::int64_t> shape;
    std::int32_t split;
    std::vector<std::int64_t> lens;

    bool is_split() const { return split != dr::not_split; }

    // This rank's rows, or -1 when not split (the value output_len reports).
    std::int64_t len(int r) const { return is_split() ? lens[r] : -1; }

    // This rank's slab as a plan reports it: both -1 when not split.
    dr::slab slab_of(int r) const { return {len(r), is_split() ? offset(r) : -1}; }

    std::int64_t offset(int r) const
    {
        return is_split() ? std::accumulate(lens.begin(), lens.begin() + r, std::int64_t{0}) : 0;
    }

    std::int64_t extent(int r, std::size_t d) const
    {
        return static_cast<std::int32_t>(d) == split ? lens[r] : shape[d];
    }

    std::size_t elems(int r) const
    {
        std::int64_t n = 1;
        for (std::size_t d = 0; d < shape.size(); ++d)
            n *= extent(r, d);
        return static_cast<std::size_t>(n);
    }

    // Global flat (row-major) index of rank r's local element i.
    std::int64_t global_index(int r, std::int64_t i) const
    {
        std::int64_t index = 0, stride = 1;
        for (std::size_t d = shape.size(); d-- > 0;) {
            const std::int64_t n = extent(r, d);
            const bool split_axis = static_cast<std::int32_t>(d) == split;
            const std::int64_t coord = i % n + (split_axis ? offset(r) : 0);
            i /= n;
            index += coord * stride;
            stride *= shape[d];
        }
        return index;
    }
};

struct reshape_case {
    std::string name;
    side in;
    std::vector<std::int64_t> new_gshape; // as passed: may hold a -1
    side out;
    bool explicit_targets;                // new_local_len = out.lens[rank], else balanced
    int path;                             // the dr_path expected, -1 for either
    bool moves_nothing;                   // no rank sends or receives
};

std::vector<std::int64_t> balanced_lens(std::int64_t extent)
{
    std::vector<std::int64_t> lens;
    for (int r = 0; r < nranks; ++r)
        lens.push_back(dr::balanced_slab(extent, nranks, r).len);
    return lens;
}

// Rank r gets a share proportional to r + 1 (rank 0 often nothing).
std::vector<std::int64_t> weighted_lens(std::int64_t extent)
{
    const std::int64_t total = std::int64_t{nranks} * (nranks + 1) / 2;
    std::vector<std::int64_t> lens;
    for (std::int64_t r = 0; r < nranks; ++r)
        lens.push_back(extent * (r + 1) * (r + 2) / 2 / total - extent * r * (r + 1) / 2 / total);
    return lens;
}

std::vector<std::int64_t> reversed(std::vector<std::int64_t> lens)
{
    return {lens.rbegin(), lens.rend()};
}

// Every array has at most 120 elements, so that int8 holds every global index.
std::vector<reshape_case> cases()
{
    const std::vector<std::int64_t> g = {4, 6, 5};
    const std::int64_t p = nranks;
    return {
        {"split change (4,6,5) split 1 -> (-1,5) split 0", {g, 1, balanced_lens(6)}, {-1, 5},
         {{24, 5}, 0, balanced_lens(24)}, false, DR_PATH_EXCHANGE, false},
        {"uneven -> balanced (4,6,5) split 0 -> (4,30) split 0", {g, 0, weighted_lens(4)}, {4, 30},
         {{4, 30}, 0, balanced_lens(4)}, false, DR_PATH_LOCAL, false},
        {"flatten (4,6,5) split 0 -> (-1) split 0", {g, 0, balanced_lens(4)}, {-1},
         {{120}, 0, balanced_lens(120)}, false, DR_PATH_LOCAL, false},
        {"not split -> (6,20) split 1", {g, dr::not_split, {}}, {6, 20},
         {{6, 20}, 1, balanced_lens(20)}, false, -1, false},
        {"uneven split 2 -> (120) not split", {g, 2, weighted_lens(5)}, {120},
         {{120}, dr::not_split, {}}, false, -1, false},
        {"not split -> (2,-1) not split", {g, dr::not_split, {}}, {2, -1},
         {{2, 60}, dr::not_split, {}}, false, -1, false},
        {"explicit targets (4,6,5) split 1 -> (24,5) split 0", {g, 1, balanced_lens(6)}, {24, 5},
         {{24, 5}, 0, reversed(weighted_lens(24))}, true, DR_PATH_EXCHANGE, false},
        {"nothing moves (2,4p,3) split 1 -> (2,-1) split 1",
         {{2, 4 * p, 3}, 1, balanced_lens(4 * p)}, {2, -1},
         {{2, 12 * p}, 1, balanced_lens(12 * p)}, false, DR_PATH_LOCAL, true},
    };
}

// The value at global index i: the index itself (wrapping in narrow types is the
// same on both sides), a pair for complex, a hash bit for bool.
template <class T>
T value_at(std::int64_t i)
{
    if constexpr (std::is_same_v<T, bool>)
        return (((static_cast<std::uint64_t>(i) * 0x9E3779B97F4A7C15u) >> 37) & 1) != 0;
    else if constexpr (std::is_same_v<T, std::complex<float>> ||
                       std::is_same_v<T, std::complex<double>>)
        return T(static_cast<typename T::value_type>(i), -static_cast<typename T::value_type>(i));
    else
        return static_cast<T>(i);
}

template <class T>
void fill(T* data, const side& s)
{
    for (std::size_t i = 0; i < s.elems(rank); ++i)
        data[i] = value_at<T>(s.global_index(rank, static_cast<std::int64_t>(i)));
}

// Checks every element of this rank's output.
template <class T>
void check_output(const T* data, const side& s, const std::string& what)
{
    std::size_t wrong = 0, first = 0;
    for (std::size_t i = 0; i < s.elems(rank); ++i) {
        if (data[i] == value_at<T>(s.global_index(rank, static_cast<std::int64_t>(i))))
            continue;
        if (wrong++ == 0)
            first = i;
    }
    check(wrong == 0, what + ": " + std::to_string(wrong) + " wrong element(s), the first at " +
                          std::to_string(first));
}

std::int64_t local_len(const reshape_case& c) { return c.in.is_split() ? c.in.lens[rank] : 0; }

std::int64_t target(const reshape_case& c)
{
    return c.explicit_targets ? c.out.lens[rank] : dr::balanced;
}

template <class T>
dr::plan<T> make_plan(const reshape_case& c)
{
    return dr::plan<T>(c.in.shape, c.in.split, MPI_COMM_WORLD, local_len(c), c.new_gshape,
                       c.out.split, target(c));
}

template <class T>
std::unique_ptr<T[]> input_array(const side& s, std::size_t size)
{
    std::unique_ptr<T[]> data(new T[size]);
    fill(data.get(), s);
    return data;
}

// The queries against the layouts, the C API and the other ranks (collective).
template <class T>
void check_queries(const dr::plan<T>& p, const reshape_case& c, const std::string& what)
{
    check(p.input_elems() == c.in.elems(rank), what + ": input_elems");
    check(p.output_shape() == c.out.shape, what + ": output_shape");
    check(p.output_len() == c.out.len(rank), what + ": output_len");
    check(p.output_elems() == c.out.elems(rank), what + ": output_elems");
    const dr::slab in = p.input_slab(), out = p.output_slab(), want_in = c.in.slab_of(rank),
                   want_out = c.out.slab_of(rank);
    check(in.len == want_in.len && in.offset == want_in.offset, what + ": input_slab");
    check(out.len == want_out.len && out.offset == want_out.offset, what + ": output_slab");

    const dr_plan_stats s = p.stats();
    const auto out_bytes = static_cast<std::int64_t>(c.out.elems(rank) * sizeof(T));
    check(c.path < 0 || s.path == c.path, what + ": stats().path");
    check(s.bytes_received + s.bytes_copied_locally == out_bytes,
          what + ": received + copied bytes are not the output");
    check(!c.moves_nothing || (s.bytes_sent == 0 && s.bytes_received == 0),
          what + ": bytes move where nothing should");
    std::int64_t sent_received[2] = {s.bytes_sent, s.bytes_received}, totals[2];
    MPI_Allreduce(sent_received, totals, 2, MPI_INT64_T, MPI_SUM, MPI_COMM_WORLD);
    check(totals[0] == totals[1], what + ": bytes sent and received differ over all ranks");

    const std::string text = p.describe();
    std::size_t needed = 0;
    dr_plan_describe(p.native_handle(), nullptr, 0, &needed);
    std::vector<char> c_text(needed + 1);
    dr_plan_describe(p.native_handle(), c_text.data(), c_text.size(), nullptr);
    check(text == c_text.data() && text.size() == needed, what + ": describe() is not the C text");
    check(text.find("rank " + std::to_string(rank) + ": path ") != std::string::npos,
          what + ": describe() = " + text);
}

// Pointer overloads, out of place and in place (every type, bool included).
template <class T>
void check_pointers(dr::plan<T>& p, const reshape_case& c, const std::string& what)
{
    const std::size_t n_in = p.input_elems(), n_out = p.output_elems();
    const auto in = input_array<T>(c.in, n_in);
    std::unique_ptr<T[]> out(new T[n_out]);
    p.execute(in.get(), out.get(), n_out);
    check_output(out.get(), c.out, what + " execute(pointer)");
    std::unique_ptr<T[]> sized(new T[n_out]);
    p.execute(in.get(), n_in, sized.get(), n_out);
    check_output(sized.get(), c.out, what + " execute(pointer, in_size)");

    const std::size_t both = std::max(n_in, n_out);
    const auto buf = input_array<T>(c.in, both);
    p.execute_in_place(buf.get(), both);
    check_output(buf.get(), c.out, what + " execute_in_place(pointer)");

    // Non-blocking: a test loop, then begin and a request that waits when destroyed.
    std::unique_ptr<T[]> later(new T[n_out]);
    dr::request r = p.execute_begin(in.get(), later.get(), n_out);
    while (!r.test()) {
    }
    check(!r.pending(), what + " a completed request is no longer pending");
    check_output(later.get(), c.out, what + " execute_begin + test");
    {
        std::unique_ptr<T[]> again(new T[n_out]);
        dr::request waits_when_destroyed = p.execute_begin(in.get(), again.get(), n_out);
        waits_when_destroyed.wait();
        check_output(again.get(), c.out, what + " execute_begin + wait");
        dr::request destroyed_in_flight = p.execute_begin(in.get(), later.get(), n_out);
    }
    check_output(later.get(), c.out, what + " a destroyed request completed its execution");
    std::unique_ptr<T[]> sized_later(new T[n_out]);
    dr::request sized_request = p.execute_begin(in.get(), n_in, sized_later.get(), n_out);
    sized_request.wait();
    check_output(sized_later.get(), c.out, what + " execute_begin(pointer, in_size)");
}

// Vector overloads (not for bool).
template <class T>
void check_vectors(dr::plan<T>& p, const reshape_case& c, const std::string& what)
{
    std::vector<T> in(p.input_elems());
    fill(in.data(), c.in);
    // One element more than needed, which must stay untouched.
    const T sentinel = value_at<T>(77);
    std::vector<T> out(p.output_elems() + 1, sentinel);
    p.execute(in, out);
    check_output(out.data(), c.out, what + " execute(vector)");
    check(out.back() == sentinel, what + " execute(vector) wrote beyond the output");

    std::vector<T> buf(std::max(in.size(), p.output_elems()));
    fill(buf.data(), c.in);
    p.execute_in_place(buf);
    check_output(buf.data(), c.out, what + " execute_in_place(vector)");

    std::vector<T> later(p.output_elems() + 1, sentinel);
    dr::request r = p.execute_begin(in, later);
    r.wait();
    check_output(later.data(), c.out, what + " execute_begin(vector)");
    check(later.back() == sentinel, what + " execute_begin(vector) wrote beyond the output");
}

// The one-shot reshapes from a vector, a pointer and (C++20) a span (not for bool).
template <class T>
void check_one_shot(const reshape_case& c, const std::string& what)
{
    std::vector<T> in(c.in.elems(rank));
    fill(in.data(), c.in);
    const auto once = dr::reshape(in, c.in.shape, c.in.split, MPI_COMM_WORLD, local_len(c),
                                  c.new_gshape, c.out.split, target(c));
    check(once.size() == c.out.elems(rank), what + " reshape(vector): size");
    check_output(once.data(), c.out, what + " reshape(vector)");

    const auto from_pointer = dr::reshape(in.data(), c.in.shape, c.in.split, MPI_COMM_WORLD,
                                          local_len(c), c.new_gshape, c.out.split, target(c));
    check(from_pointer == once, what + " reshape(pointer) differs from reshape(vector)");
#ifdef __cpp_lib_span
    const auto from_span = dr::reshape(std::span<const T>(in), c.in.shape, c.in.split,
                                       MPI_COMM_WORLD, local_len(c), c.new_gshape, c.out.split,
                                       target(c));
    check(from_span == once, what + " reshape(span) differs from reshape(vector)");
#endif
}

#ifdef __cpp_lib_span
// Span overloads (every type, bool included).
template <class T>
void check_spans(dr::plan<T>& p, const reshape_case& c, const std::string& what)
{
    const std::size_t n_in = p.input_elems(), n_out = p.output_elems();
    const auto in = input_array<T>(c.in, n_in);
    std::unique_ptr<T[]> out(new T[n_out]);
    p.execute(std::span<const T>(in.get(), n_in), std::span<T>(out.get(), n_out));
    check_output(out.get(), c.out, what + " execute(span)");

    const std::size_t both = std::max(n_in, n_out);
    const auto buf = input_array<T>(c.in, both);
    p.execute_in_place(std::span<T>(buf.get(), both));
    check_output(buf.get(), c.out, what + " execute_in_place(span)");
}
#endif

template <class T>
void check_element_type(const char* type_name)
{
    const std::vector<reshape_case> all = cases();
    for (const reshape_case& c : all) {
        const std::string what = c.name + " [" + type_name + "]";
        // One-shot reshapes plan anew on every call, and at 3-4 ranks on 2 cores every
        // collective waits for time slices: every case for double, one for the others.
        const bool one_shot = std::is_same_v<T, double> || &c == &all.front();
        try {
            dr::plan<T> p = make_plan<T>(c);
            check_queries(p, c, what);
            check_pointers(p, c, what);
            if constexpr (!std::is_same_v<T, bool>) {
                check_vectors(p, c, what);
                if (one_shot)
                    check_one_shot<T>(c, what);
            }
#ifdef __cpp_lib_span
            check_spans(p, c, what);
#endif
        } catch (const dr::error& e) {
            check(false, what + ": threw " + e.what());
        }
    }
}

void check_element_types()
{
    check_element_type<std::int8_t>("int8_t");
    check_element_type<std::int16_t>("int16_t");
    check_element_type<std::int32_t>("int32_t");
    check_element_type<std::int64_t>("int64_t");
    check_element_type<long long>("long long");
    check_element_type<std::uint8_t>("uint8_t");
    check_element_type<std::uint16_t>("uint16_t");
    check_element_type<std::uint32_t>("uint32_t");
    check_element_type<std::uint64_t>("uint64_t");
    check_element_type<float>("float");
    check_element_type<double>("double");
    check_element_type<std::complex<float>>("complex<float>");
    check_element_type<std::complex<double>>("complex<double>");
    check_element_type<bool>("bool");
}

// Runs `p` out of place and checks every element (collective).
void check_runs(dr::plan<double>& p, const reshape_case& c, const std::string& what)
{
    std::vector<double> in(p.input_elems()), out(p.output_elems());
    fill(in.data(), c.in);
    p.execute(in, out);
    check_output(out.data(), c.out, what);
}

// Expects `call` to throw `expected` on every rank (nobody when `only_bad`, except
// bad_rank), with a message containing `needle` (`bad_needle` on bad_rank).
template <class Call>
void expect_error(const std::string& name, Call&& call, dr_status expected,
                  const std::string& needle, const std::string& bad_needle, bool only_bad = false)
{
    int status = DR_SUCCESS;
    std::string message;
    try {
        call();
    } catch (const dr::error& e) {
        status = e.status();
        message = e.what();
    }
    const bool bad = rank == bad_rank;
    const int wanted = !only_bad || bad ? expected : DR_SUCCESS;
    check(status == wanted, name + ": status " + std::to_string(status) + " (" + message +
                                "), expected " + std::to_string(wanted));
    std::vector<int> all(static_cast<std::size_t>(nranks));
    MPI_Allgather(&status, 1, MPI_INT, all.data(), 1, MPI_INT, MPI_COMM_WORLD);
    for (int r = 0; r < nranks; ++r)
        check(only_bad || all[r] == all[0], name + ": ranks threw different statuses");
    const std::string& wanted_text = bad ? bad_needle : needle;
    check(status == DR_SUCCESS || message.find(wanted_text) != std::string::npos,
          name + ": the message does not say \"" + wanted_text + "\": " + message);
    if (rank == 0)
        std::printf("%-52s -> %s\n", name.c_str(), message.empty() ? "no error" : message.c_str());
}

// The library's message, on every rank, about bad_rank's input one short of `elems`.
std::string short_input_text(std::size_t elems)
{
    return "the input buffer holds " + std::to_string(elems - 1) + " elements but rank " +
           std::to_string(bad_rank) + " holds " + std::to_string(elems) + " input elements";
}

void check_errors()
{
    const bool bad = rank == bad_rank;
    // The split change: the exchange path, moving data at 2 ranks or more. The sizes
    // of bad_rank are the same on every rank, so every rank takes the same branches.
    const reshape_case c = cases()[0];
    const std::size_t bad_in = c.in.elems(bad_rank), bad_out = c.out.elems(bad_rank);

    expect_error("plan: split 7 on one rank", [&] {
        dr::plan<double>(c.in.shape, bad ? 7 : c.in.split, MPI_COMM_WORLD, local_len(c),
                         c.new_gshape, c.out.split);
    }, DR_ERROR_INVALID_SPLIT, "split = 7", "split = 7");
    // Alone, the value is out of range; with other ranks, the sum is wrong.
    const std::int64_t too_many = c.in.lens[bad_rank] + 1;
    const std::string len_text =
        nranks > 1 ? "rank " + std::to_string(bad_rank) + ": " + std::to_string(too_many)
                   : "local_len = " + std::to_string(too_many) + " on rank 0";
    expect_error("plan: local_len one too many on one rank", [&] {
        dr::plan<double>(c.in.shape, c.in.split, MPI_COMM_WORLD, bad ? too_many : local_len(c),
                         c.new_gshape, c.out.split);
    }, DR_ERROR_INVALID_DISTRIBUTION, len_text, len_text);
    expect_error("plan: new_gshape extent -2 on one rank", [&] {
        dr::plan<double>(c.in.shape, c.in.split, MPI_COMM_WORLD, local_len(c),
                         bad ? dr::shape{-2, 5} : dr::shape(c.new_gshape), c.out.split);
    }, DR_ERROR_INVALID_SHAPE, "new_shape[0] = -2", "new_shape[0] = -2");
    // Explicit targets, the balanced ones but one more row on one rank: 25 of 24.
    const std::string sum_text = nranks > 1 ? "add up to 25" : "new_local_len = 25";
    expect_error("plan: new_local_len adding up to 25 of 24", [&] {
        dr::plan<double>(c.in.shape, c.in.split, MPI_COMM_WORLD, local_len(c), c.new_gshape,
                         c.out.split, c.out.lens[rank] + (bad ? 1 : 0));
    }, DR_ERROR_INVALID_DISTRIBUTION, sum_text, sum_text);
    if (nranks > 1) {
        expect_error("plan: float on one rank, double on the others", [&] {
            if (bad)
                dr::plan<float>(c.in.shape, c.in.split, MPI_COMM_WORLD, local_len(c),
                                c.new_gshape, c.out.split);
            else
                dr::plan<double>(c.in.shape, c.in.split, MPI_COMM_WORLD, local_len(c),
                                 c.new_gshape, c.out.split);
        }, DR_ERROR_INCONSISTENT_ARGUMENTS, "different element size", "rank " +
           std::to_string(bad_rank) + " passed 4");
        expect_error("plan: int64_t on one rank, double on the others", [&] {
            if (bad)
                dr::plan<std::int64_t>(c.in.shape, c.in.split, MPI_COMM_WORLD, local_len(c),
                                       c.new_gshape, c.out.split);
            else
                dr::plan<double>(c.in.shape, c.in.split, MPI_COMM_WORLD, local_len(c),
                                 c.new_gshape, c.out.split);
        }, DR_ERROR_INCONSISTENT_ARGUMENTS, "different dtype", "different dtype");
    }

    dr::plan<double> p = make_plan<double>(c);
    std::vector<double> in(p.input_elems()), out(p.output_elems());
    fill(in.data(), c.in);
    if (bad_out > 0) {
        const std::string text = "out_capacity = " + std::to_string(bad_out - 1);
        expect_error("execute: output one short on one rank", [&] {
            std::vector<double> shorter(out.size() - (bad ? 1 : 0));
            p.execute(in, shorter);
        }, DR_ERROR_BUFFER_TOO_SMALL, text, text);
    }
    if (bad_in > 0) {
        // execute and reshape pass the input's length to the library, whose message
        // every rank gets.
        const std::string library = short_input_text(bad_in);
        const std::vector<double> shorter(in.begin(), in.end() - (bad ? 1 : 0));
        expect_error("execute: input one short on one rank", [&] { p.execute(shorter, out); },
                     DR_ERROR_BUFFER_TOO_SMALL, library, library);
        expect_error("execute_begin: input one short on one rank", [&] {
            dr::request r = p.execute_begin(shorter, out);
        }, DR_ERROR_BUFFER_TOO_SMALL, library, library);
        expect_error("reshape: input one short on one rank", [&] {
            (void)dr::reshape(shorter, c.in.shape, c.in.split, MPI_COMM_WORLD, local_len(c),
                              c.new_gshape, c.out.split);
        }, DR_ERROR_BUFFER_TOO_SMALL, library, library);
    }
    const std::size_t bad_both = std::max(bad_in, bad_out);
    const std::string in_place_text = "out_capacity = " + std::to_string(bad_both - 1);
    expect_error("execute_in_place: buffer one short on one rank", [&] {
        std::vector<double> buf(std::max(in.size(), out.size()) - (bad ? 1 : 0));
        p.execute_in_place(buf);
    }, DR_ERROR_BUFFER_TOO_SMALL, in_place_text, in_place_text);
    check_runs(p, c, "execute after the failures");

    // A plan that moves nothing executes locally: only the faulty rank throws.
    const reshape_case still = cases().back();
    dr::plan<double> local = make_plan<double>(still);
    const std::string still_text = "out_capacity = " + std::to_string(local.output_elems() - 1);
    expect_error("nothing moves: output one short on one rank", [&] {
        std::vector<double> in_still(local.input_elems());
        std::vector<double> shorter(local.output_elems() - (bad ? 1 : 0));
        local.execute(in_still, shorter);
    }, DR_ERROR_BUFFER_TOO_SMALL, "", still_text, true);
    check_runs(local, still, "nothing moves: execute after the failure");
    // Unlike a plan's execute, the one-shot reshape fails on every rank even then.
    expect_error("nothing moves: reshape input one short on one rank", [&] {
        std::vector<double> in_still(local.input_elems() - (bad ? 1 : 0));
        (void)dr::reshape(in_still, still.in.shape, still.in.split, MPI_COMM_WORLD,
                          local_len(still), still.new_gshape, still.out.split);
    }, DR_ERROR_BUFFER_TOO_SMALL, short_input_text(local.input_elems()),
       short_input_text(local.input_elems()));

    // 2^60 bytes of output on one rank, beyond any address space: the allocation
    // fails there, and every rank throws before anything is read from `dummy`.
    const std::int64_t huge = std::int64_t{1} << 57;
    const double dummy = 0;
    const std::string allocation_text = "the output of " + std::to_string(huge) +
                                        " elements could not be allocated (rank " +
                                        std::to_string(bad_rank) + ")";
    expect_error("reshape: output allocation failing on one rank", [&] {
        const std::int64_t n = huge + nranks - 1;
        (void)dr::reshape(&dummy, {n}, 0, MPI_COMM_WORLD, dr::balanced_slab(n, nranks, rank).len,
                          {n}, 0, bad ? huge : 1);
    }, DR_ERROR_BUFFER_TOO_SMALL, allocation_text, allocation_text);

    expect_error("balanced_slab(10, 4, 4) on one rank (local)", [&] {
        if (bad)
            (void)dr::balanced_slab(10, 4, 4);
    }, DR_ERROR_INVALID_DISTRIBUTION, "", "rank = 4", true);
}

// Plans with tuning knobs: tiny limits (cut, packed and windowed messages, in place
// in rounds of a few bytes) on every case, every element checked; a knob out of
// range on one rank throws DR_ERROR_INVALID_OPTION everywhere, naming it and the rank.
void check_switches(const reshape_case& c);

void check_options()
{
    dr::options tiny;
    tiny.max_message_bytes = 24;
    tiny.slot_bytes = 1;
    tiny.run_budget = 4;
    tiny.window = 1;
    tiny.in_place_budget = 16;
    for (const reshape_case& c : cases()) {
        dr::plan<double> p(c.in.shape, c.in.split, MPI_COMM_WORLD, local_len(c), c.new_gshape,
                           c.out.split, target(c), tiny);
        check_runs(p, c, c.name + " with tiny options");
        std::vector<double> buf(std::max(p.input_elems(), p.output_elems()));
        fill(buf.data(), c.in);
        p.execute_in_place(buf);
        check_output(buf.data(), c.out, c.name + " in place with tiny options");
    }
    const reshape_case c = cases().front();
    if (!c.explicit_targets) {
        dr::plan<double> balanced(c.in.shape, c.in.split, MPI_COMM_WORLD, local_len(c),
                                  c.new_gshape, c.out.split, dr::options{});
        check_runs(balanced, c, c.name + " with default options");
    }
    dr::options bad_window;
    bad_window.window = rank == bad_rank ? 0 : -1;
    const std::string text = "options.window = 0 is out of range";
    const std::string who = "(rank " + std::to_string(bad_rank) + ")";
    expect_error("plan: window 0 on one rank", [&] {
        dr::plan<double> p(c.in.shape, c.in.split, MPI_COMM_WORLD, local_len(c), c.new_gshape,
                           c.out.split, target(c), bad_window);
    }, DR_ERROR_INVALID_OPTION, text, who);
    expect_error("plan: window 0 on one rank (the rank)", [&] {
        dr::plan<double> p(c.in.shape, c.in.split, MPI_COMM_WORLD, local_len(c), c.new_gshape,
                           c.out.split, target(c), bad_window);
    }, DR_ERROR_INVALID_OPTION, who, text);
    check_switches(c);
}

// Every switch forced on, then off, with tiny limits (so that long runs at a stride
// take the ways the switches choose): every element checked, out of place and in
// place; a switch of 2 on one rank throws DR_ERROR_INVALID_OPTION everywhere.
void check_switches(const reshape_case& c)
{
    for (const std::int64_t on : {1, 0}) {
        dr::options forced;
        forced.slot_bytes = 1;
        forced.strided_sends = forced.strided_slots = forced.run_messages = on;
        forced.direct_reads = forced.sleeping_waits = on;
        for (const reshape_case& one : cases()) {
            dr::plan<double> p(one.in.shape, one.in.split, MPI_COMM_WORLD, local_len(one),
                               one.new_gshape, one.out.split, target(one), forced);
            const std::string name = one.name + " with every switch " + std::to_string(on);
            check_runs(p, one, name);
            std::vector<double> buf(std::max(p.input_elems(), p.output_elems()));
            fill(buf.data(), one.in);
            p.execute_in_place(buf);
            check_output(buf.data(), one.out, name + " in place");
        }
    }
    dr::options bad_switch;
    bad_switch.sleeping_waits = rank == bad_rank ? 2 : -1;
    const std::string text = "options.sleeping_waits = 2 is out of range";
    expect_error("plan: sleeping_waits 2 on one rank", [&] {
        dr::plan<double> p(c.in.shape, c.in.split, MPI_COMM_WORLD, local_len(c), c.new_gshape,
                           c.out.split, target(c), bad_switch);
    }, DR_ERROR_INVALID_OPTION, text, text);
}

void check_moves()
{
    const std::vector<reshape_case> all = cases();
    const reshape_case &a_case = all[0], &b_case = all[1];
    dr::plan<double> a = make_plan<double>(a_case);
    dr_plan* handle = a.native_handle();
    dr::plan<double> b(std::move(a));
    check(!a && a.native_handle() == nullptr && a.input_elems() == 0, "moved-from plan not empty");
    check(b && b.native_handle() == handle, "move construction did not take the plan");
    check_runs(b, a_case, "move-constructed plan");

    // Move assignment destroys the target's plan (collective) and takes the source's.
    dr::plan<double> c = make_plan<double>(b_case);
    c = std::move(b);
    check(!b && c.native_handle() == handle, "move assignment did not take the plan");
    check_runs(c, a_case, "move-assigned plan");

    dr::plan<double> d = make_plan<double>(b_case);
    swap(c, d);
    check_runs(c, b_case, "swapped plan (first)");
    check_runs(d, a_case, "swapped plan (second)");

    // Plans in a vector survive its reallocations.
    std::vector<dr::plan<double>> plans;
    for (const reshape_case& one : all)
        plans.push_back(make_plan<double>(one));
    for (std::size_t i = 0; i < all.size(); ++i)
        check_runs(plans[i], all[i], "plan " + std::to_string(i) + " in a vector");

    // An empty plan throws DR_ERROR_NULL_POINTER, locally, from every call.
    const dr::plan<double> empty;
    const auto null_pointer = [](auto&& call) {
        try {
            call();
        } catch (const dr::error& e) {
            return e.status() == DR_ERROR_NULL_POINTER;
        }
        return false;
    };
    std::vector<double> none;
    check(!empty && null_pointer([&] { (void)empty.output_len(); }) &&
              null_pointer([&] { (void)empty.output_elems(); }) &&
              null_pointer([&] { (void)empty.output_shape(); }) &&
              null_pointer([&] { (void)empty.input_slab(); }) &&
              null_pointer([&] { (void)empty.output_slab(); }) &&
              null_pointer([&] { (void)empty.stats(); }) &&
              null_pointer([&] { (void)empty.describe(); }) &&
              null_pointer([&] { a.execute(none, none); }) &&
              null_pointer([&] { a.execute_in_place(none); }),
          "an empty plan does not throw DR_ERROR_NULL_POINTER");
}

} // namespace

int main(int argc, char** argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &nranks);
    bad_rank = nranks - 1;

    check_element_types();
    check_options();
    check_moves();
    check_errors();

    int total = 0;
    MPI_Allreduce(&failures, &total, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0)
        std::printf("%s: C++%ld, %d failed check(s) on %d rank(s)\n", total ? "FAILED" : "OK",
                    __cplusplus / 100 % 100, total, nranks);
    MPI_Finalize();
    return total ? 1 : 0;
}
