// What distreshape.hpp refuses at compile time, with its own message: ctest
// compiles this file once per DISTRESHAPE_CASE and expects the static_assert's text
// (cases 5 and 8-10: the deleted function's name) in the compiler's output.
#include <distreshape.hpp>

#include <vector>

namespace dr = distreshape;

void refused(std::vector<bool>& flags, std::vector<long double>& values, const bool* raw)
{
#if DISTRESHAPE_CASE == 1 // an element type without a dr_dtype
    dr::plan<long double> p({4}, 0, MPI_COMM_WORLD, 4, {2, 2}, 1);
    p.execute(values, values);
#elif DISTRESHAPE_CASE == 2 // a character type, though it has the size of int8_t
    dr::plan<char> p({4}, 0, MPI_COMM_WORLD, 4, {2, 2}, 1);
#elif DISTRESHAPE_CASE == 3 // std::vector<bool> has no bool array to pass
    dr::plan<bool> p({4}, 0, MPI_COMM_WORLD, 4, {2, 2}, 1);
    p.execute_in_place(flags);
#elif DISTRESHAPE_CASE == 4 // reshape returns a std::vector, so not for bool
    (void)dr::reshape(raw, {4}, 0, MPI_COMM_WORLD, 4, {2, 2}, 1);
#elif DISTRESHAPE_CASE == 5 // a temporary plan would complete the execution at once
    double in[4] = {0, 1, 2, 3}, out[4];
    dr::request r = dr::plan<double>({4}, 0, MPI_COMM_WORLD, 4, {2, 2}, 1).execute_begin(in, out, 4);
#elif DISTRESHAPE_CASE == 6 // a fused field of std::vector<bool>
    std::vector<bool> more(flags);
    dr::fused_field f(flags, more);
#elif DISTRESHAPE_CASE == 7 // a fused field's input and output of different types
    std::vector<double> out(values.size());
    dr::fused_field f(values, out);
#elif DISTRESHAPE_CASE == 8 // a temporary input, freed while the execution reads it
    dr::plan<double> p({4}, 0, MPI_COMM_WORLD, 4, {2, 2}, 1);
    std::vector<double> out(4);
    dr::request r = p.execute_begin(std::vector<double>(4), out);
#elif DISTRESHAPE_CASE == 9 // temporary fields of a batch, freed while it reads them
    dr::plan<double> p({4}, 0, MPI_COMM_WORLD, 4, {2, 2}, 1);
    std::vector<std::vector<double>> outs(2, std::vector<double>(4));
    dr::request r = p.execute_batch_begin(std::vector<std::vector<double>>(2), outs);
#elif DISTRESHAPE_CASE == 10 // a fused list holding a plan destroyed at once
    std::vector<dr::fused_plan> list{dr::plan<double>({4}, 0, MPI_COMM_WORLD, 4, {2, 2}, 1)};
#endif
    (void)flags;
    (void)values;
    (void)raw;
}
