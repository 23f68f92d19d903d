# Host-compiler miscompiles the tree must not meet, each probed with a program that runs.
#
# GCC 12.2 on x86-64 (-O1 and up) compiles `if (c) x = bit_cast<float>(bit_cast<uint32_t>(x) &
# 0xffff0000)` to nothing: its split of that `and` into a 16-bit strict_low_part move (the
# fast_prefix tuning) loses the result when the value lives in a float register. Found as a bf16
# truncation with no effect in test_spec_tiles. Where it bites, that split is turned off for all.
include(CheckCXXSourceRuns)
set(_monogen_mask16_probe [=[
#include <bit>
#include <cstdint>
[[gnu::noinline]] float truncatedIf(float x, bool c) {
  if (c) x = std::bit_cast<float>(std::bit_cast<uint32_t>(x) & 0xffff0000u);
  return x;
}
[[gnu::noinline]] double truncatedIf(double x, bool c) {
  if (c) x = std::bit_cast<double>(std::bit_cast<uint64_t>(x) & ~uint64_t{0xffff});
  return x;
}
int main() {
  volatile float f = 1.2345f;
  volatile double d = 1.2345;
  volatile bool yes = true;
  const bool ok = std::bit_cast<uint32_t>(truncatedIf(f, yes)) == 0x3f9e0000u &&
                  (std::bit_cast<uint64_t>(truncatedIf(d, yes)) & 0xffff) == 0;
  return ok ? 0 : 1;
}
]=])
set(CMAKE_REQUIRED_FLAGS "-std=c++20 -O2")
check_cxx_source_runs("${_monogen_mask16_probe}" MONOGEN_HOST_MASK16_OK)
if(NOT MONOGEN_HOST_MASK16_OK)
  set(CMAKE_REQUIRED_FLAGS "-std=c++20 -O2 -mtune-ctrl=^fast_prefix")
  check_cxx_source_runs("${_monogen_mask16_probe}" MONOGEN_HOST_MASK16_OK_WITHOUT_FAST_PREFIX)
  if(NOT MONOGEN_HOST_MASK16_OK_WITHOUT_FAST_PREFIX)
    message(FATAL_ERROR "${CMAKE_CXX_COMPILER} ${CMAKE_CXX_COMPILER_VERSION} miscompiles a conditional "
                        "`& 0xffff0000` on a bit-cast float (cmake/HostCompilerChecks.cmake), even with "
                        "-mtune-ctrl=^fast_prefix: use another compiler (clang++-22)")
  endif()
  message(STATUS "${CMAKE_CXX_COMPILER_ID} ${CMAKE_CXX_COMPILER_VERSION} miscompiles a conditional "
                 "`& 0xffff0000` on a bit-cast float: building with -mtune-ctrl=^fast_prefix")
  add_compile_options(-mtune-ctrl=^fast_prefix)
endif()
unset(CMAKE_REQUIRED_FLAGS)
