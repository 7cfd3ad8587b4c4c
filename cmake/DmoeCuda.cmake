# The CUDA backend (kernels/cuda, common/backend/cuda, the `cuda` tests).
#   DMOE_CUDA=AUTO (default): built when a CUDA compiler (nvcc) is found
#   DMOE_CUDA=ON:             required; configuring fails without nvcc
#   DMOE_CUDA=OFF:            never built
# Sets DMOE_CUDA_ENABLED. Explicit architectures (Ampere A100, consumer
# Ampere, Ada, Hopper) unless CMAKE_CUDA_ARCHITECTURES is given; each is
# compiled to machine code, and 90 also to PTX for newer GPUs. The runtime is
# linked statically (cudart_static): executables need only the driver at run
# time, and start (and report "no device") on machines without one.
set(DMOE_CUDA "AUTO" CACHE STRING "Build the CUDA backend: AUTO (when nvcc is found), ON or OFF")
set_property(CACHE DMOE_CUDA PROPERTY STRINGS AUTO ON OFF)

set(DMOE_CUDA_ENABLED OFF)
string(TOUPPER "${DMOE_CUDA}" dmoe_cuda_mode)
if(NOT dmoe_cuda_mode MATCHES "^(OFF|FALSE|NO|0)$")
  if(NOT DEFINED CMAKE_CUDA_ARCHITECTURES)
    set(CMAKE_CUDA_ARCHITECTURES 80-real 86-real 89-real 90)
  endif()
  include(CheckLanguage)
  check_language(CUDA)
  if(CMAKE_CUDA_COMPILER)
    enable_language(CUDA)
    find_package(CUDAToolkit REQUIRED)
    # C++17: CMake 3.25 does not know the flag for nvcc's C++20, and the
    # kernels need nothing newer.
    set(CMAKE_CUDA_STANDARD 17)
    set(CMAKE_CUDA_STANDARD_REQUIRED ON)
    set(CMAKE_CUDA_EXTENSIONS OFF)
    set(DMOE_CUDA_ENABLED ON)
    message(STATUS "CUDA backend: on (nvcc ${CMAKE_CUDA_COMPILER_VERSION}, architectures "
                   "${CMAKE_CUDA_ARCHITECTURES})")
  elseif(dmoe_cuda_mode MATCHES "^(ON|TRUE|YES|1)$")
    message(FATAL_ERROR "DMOE_CUDA=ON, but no CUDA compiler was found: put nvcc on PATH "
                        "(or set CUDACXX), or configure with -DDMOE_CUDA=OFF")
  else()
    message(STATUS "CUDA backend: off (no nvcc found; DMOE_CUDA=ON makes it required)")
  endif()
else()
  message(STATUS "CUDA backend: off (DMOE_CUDA=OFF)")
endif()
