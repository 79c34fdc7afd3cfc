# Helpers that keep src/ and tests/ free of repeated target boilerplate.

set(STAR_WARNINGS -Wall -Wextra -Wno-unused-parameter)
set(STAR_SANITIZE_FLAGS -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined)
# libFuzzer's coverage instrumentation for libraries; the fuzz targets link with -fsanitize=fuzzer.
set(STAR_FUZZ_FLAGS -fsanitize=fuzzer-no-link,address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined)

# star_core_library(NAME <target> [SANITIZE | FUZZ]): the engine library from every source under the
# concern folders. The SANITIZE variant is built at -O1 with ASan + UBSan for the 'asan' test label;
# the FUZZ variant (clang) adds libFuzzer's coverage instrumentation for tests/fuzz.
function(star_core_library)
  cmake_parse_arguments(ARG "SANITIZE;FUZZ" "NAME" "" ${ARGN})
  add_library(${ARG_NAME} STATIC ${STAR_CORE_SOURCES})
  target_include_directories(${ARG_NAME} PUBLIC ${CMAKE_SOURCE_DIR}/include)
  target_compile_options(${ARG_NAME} PRIVATE ${STAR_WARNINGS})
  target_link_libraries(${ARG_NAME} PUBLIC
    star_engine_wire ZLIB::ZLIB MPI::MPI_CXX spdlog::spdlog nlohmann_json::nlohmann_json
    PkgConfig::OPENBLAS DNNL::dnnl PkgConfig::PCRE2 OpenMP::OpenMP_CXX CLI11::CLI11 Threads::Threads)
  if(ARG_SANITIZE)
    target_compile_options(${ARG_NAME} PUBLIC ${STAR_SANITIZE_FLAGS} -O1 -g)
    target_link_options(${ARG_NAME} PUBLIC ${STAR_SANITIZE_FLAGS})
  elseif(ARG_FUZZ)
    target_compile_options(${ARG_NAME} PUBLIC ${STAR_FUZZ_FLAGS} -O1 -g)
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

# star_proto_library(NAME <target> ROOT <dir> PROTOS <paths under ROOT> [MESSAGES_ONLY]): protobuf
# messages and gRPC stubs generated into the build tree, included by their path under ROOT with
# .pb.h / .grpc.pb.h. MESSAGES_ONLY: the messages alone, for wires that are not gRPC services.
function(star_proto_library)
  cmake_parse_arguments(ARG "MESSAGES_ONLY" "NAME;ROOT" "PROTOS" ${ARGN})
  set(out_dir ${CMAKE_CURRENT_BINARY_DIR}/${ARG_NAME})
  set(generated_sources)
  foreach(proto ${ARG_PROTOS})
    string(REGEX REPLACE "\\.proto$" "" stem ${proto})
    if(ARG_MESSAGES_ONLY)
      set(generated ${out_dir}/${stem}.pb.cc ${out_dir}/${stem}.pb.h)
      add_custom_command(OUTPUT ${generated}
        COMMAND ${CMAKE_COMMAND} -E make_directory ${out_dir}
        COMMAND protobuf::protoc --proto_path=${ARG_ROOT} --cpp_out=${out_dir} ${ARG_ROOT}/${proto}
        DEPENDS ${ARG_ROOT}/${proto} protobuf::protoc
        COMMENT "protoc ${proto}" VERBATIM)
    else()
      set(generated ${out_dir}/${stem}.pb.cc ${out_dir}/${stem}.pb.h ${out_dir}/${stem}.grpc.pb.cc ${out_dir}/${stem}.grpc.pb.h)
      add_custom_command(OUTPUT ${generated}
        COMMAND ${CMAKE_COMMAND} -E make_directory ${out_dir}
        COMMAND protobuf::protoc --proto_path=${ARG_ROOT} --cpp_out=${out_dir} --grpc_out=${out_dir}
                --plugin=protoc-gen-grpc=$<TARGET_FILE:gRPC::grpc_cpp_plugin> ${ARG_ROOT}/${proto}
        DEPENDS ${ARG_ROOT}/${proto} protobuf::protoc gRPC::grpc_cpp_plugin
        COMMENT "protoc ${proto}" VERBATIM)
    endif()
    list(APPEND generated_sources ${generated})
  endforeach()
  add_library(${ARG_NAME} STATIC ${generated_sources})
  target_include_directories(${ARG_NAME} SYSTEM PUBLIC ${out_dir})
  if(ARG_MESSAGES_ONLY)
    target_link_libraries(${ARG_NAME} PUBLIC protobuf::libprotobuf)
  else()
    target_link_libraries(${ARG_NAME} PUBLIC gRPC::grpc++ protobuf::libprotobuf)
  endif()
endfunction()

# star_server_library(NAME <target> CORE <star_core target>): the gRPC server from src/server/,
# over the given engine library (the SANITIZE variant of star_core gives the ASan server).
function(star_server_library)
  cmake_parse_arguments(ARG "" "NAME;CORE" "" ${ARGN})
  add_library(${ARG_NAME} STATIC ${STAR_SERVER_SOURCES})
  target_compile_options(${ARG_NAME} PRIVATE ${STAR_WARNINGS})
  target_compile_definitions(${ARG_NAME} PRIVATE STAR_VERSION="${PROJECT_VERSION}")
  target_link_libraries(${ARG_NAME} PUBLIC ${ARG_CORE} star_proto gRPC::grpc++_reflection)
endfunction()

# star_http_library(NAME <target> CORE <star_core target>): the OpenAI-compatible HTTP shim from
# src/http/ (cpp-httplib in front of the star.v1 gRPC client).
function(star_http_library)
  cmake_parse_arguments(ARG "" "NAME;CORE" "" ${ARGN})
  add_library(${ARG_NAME} STATIC ${STAR_HTTP_SOURCES})
  target_compile_options(${ARG_NAME} PRIVATE ${STAR_WARNINGS})
  target_link_libraries(${ARG_NAME} PUBLIC ${ARG_CORE} star_proto PkgConfig::HTTPLIB)
endfunction()
