# Helpers that keep src/ and tests/ free of repeated target boilerplate.

set(STAR_WARNINGS -Wall -Wextra -Wno-unused-parameter)
set(STAR_SANITIZE_FLAGS -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined)

# star_core_library(NAME <target> [SANITIZE]): the engine library from every source under the
# concern folders. The SANITIZE variant is built at -O1 with ASan + UBSan for the 'asan' test label.
function(star_core_library)
  cmake_parse_arguments(ARG "SANITIZE" "NAME" "" ${ARGN})
  add_library(${ARG_NAME} STATIC ${STAR_CORE_SOURCES})
  target_include_directories(${ARG_NAME} PUBLIC ${CMAKE_SOURCE_DIR}/include)
  target_compile_options(${ARG_NAME} PRIVATE ${STAR_WARNINGS})
  target_link_libraries(${ARG_NAME} PUBLIC
    MPI::MPI_CXX spdlog::spdlog nlohmann_json::nlohmann_json
    PkgConfig::OPENBLAS PkgConfig::PCRE2 OpenMP::OpenMP_CXX CLI11::CLI11 Threads::Threads)
  if(ARG_SANITIZE)
    target_compile_options(${ARG_NAME} PUBLIC ${STAR_SANITIZE_FLAGS} -O1 -g)
    target_link_options(${ARG_NAME} PUBLIC ${STAR_SANITIZE_FLAGS})
  else()
    target_compile_options(${ARG_NAME} PRIVATE $<$<CONFIG:Release>:-O3 -march=native>)
  endif()
endfunction()

# star_cuda_library(NAME <target> SOURCES ...): the CUDA backend (kernels/, backend/cuda, the NCCL
# communicator) on top of star_core. It has no sanitized variant, so nvcc and ASan never meet:
# the 'asan' unit tests link star_core_asan alone.
function(star_cuda_library)
  cmake_parse_arguments(ARG "" "NAME" "SOURCES" ${ARGN})
  add_library(${ARG_NAME} STATIC ${ARG_SOURCES})
  target_include_directories(${ARG_NAME} PUBLIC ${CMAKE_SOURCE_DIR}/include)
  target_compile_options(${ARG_NAME} PRIVATE
    $<$<COMPILE_LANGUAGE:CXX>:${STAR_WARNINGS}>
    $<$<AND:$<COMPILE_LANGUAGE:CXX>,$<CONFIG:Release>>:-O3 -march=native>
    $<$<COMPILE_LANGUAGE:CUDA>:-lineinfo -Xcompiler=-Wall,-Wextra,-Wno-unused-parameter>)
  target_link_libraries(${ARG_NAME} PUBLIC
    star_core CUDA::cudart CUDA::cublas CUDA::cublasLt star_nccl)
endfunction()
