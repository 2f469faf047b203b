// What the C++ tests share: this rank, the rank count, the failed checks, a
// check that prints its failure, and the status a call throws.
#pragma once

#include <distreshape.hpp>

#include <cstdio>
#include <string>

namespace {

int rank, nranks;
int failures;

// Counts and prints a failed check.
void check(bool ok, const std::string& what)
{
    if (!ok) {
        std::printf("rank %d: FAIL %s\n", rank, what.c_str());
        failures++;
    }
}

// The status of what `f` throws (DR_SUCCESS when it throws nothing).
template <class F>
dr_status status_of(F&& f)
{
    try {
        f();
    } catch (const distreshape::error& e) {
        return e.status();
    }
    return DR_SUCCESS;
}

} // namespace
