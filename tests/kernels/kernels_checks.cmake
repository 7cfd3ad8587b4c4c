# Whole-binary checks of the CPU kernels' instruction-set confinement,
# included from tests/CMakeLists.txt after every executable is defined.

# Every executable target of the project, all directories.
function(dmoe_collect_executables dir out)
  get_property(targets DIRECTORY ${dir} PROPERTY BUILDSYSTEM_TARGETS)
  set(found)
  foreach(target ${targets})
    get_target_property(type ${target} TYPE)
    if(type STREQUAL "EXECUTABLE")
      list(APPEND found ${target})
    endif()
  endforeach()
  get_property(subdirs DIRECTORY ${dir} PROPERTY SUBDIRECTORIES)
  foreach(subdir ${subdirs})
    dmoe_collect_executables(${subdir} sub_found)
    list(APPEND found ${sub_found})
  endforeach()
  set(${out} ${found} PARENT_SCOPE)
endfunction()

# No AVX/AVX2/AVX-512 code outside kernels/cpu/avx2 and kernels/cpu/avx512,
# in the kernel archive itself and in every executable of the project.
dmoe_collect_executables(${PROJECT_SOURCE_DIR} dmoe_executables)
set(dmoe_isa_files $<TARGET_FILE:dmoe_kernels>)
foreach(target ${dmoe_executables})
  list(APPEND dmoe_isa_files $<TARGET_FILE:${target}>)
endforeach()
add_test(NAME kernels.isa_confinement
  COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/kernels/check_isa_confinement.sh ${dmoe_isa_files})
set_tests_properties(kernels.isa_confinement PROPERTIES LABELS unit SKIP_RETURN_CODE 77 TIMEOUT 300)

# The kernel tests on emulated AVX2-only and pre-AVX CPUs (only meaningful when the
# build has the SIMD levels).
if(TARGET kernels_tests AND DMOE_CPU_SIMD_BUILT)
  add_test(NAME kernels.emulated_cpus_under_qemu
    COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/kernels/run_under_qemu.sh $<TARGET_FILE:kernels_tests>)
  set_tests_properties(kernels.emulated_cpus_under_qemu
    PROPERTIES LABELS unit SKIP_RETURN_CODE 77 TIMEOUT 300)
endif()
