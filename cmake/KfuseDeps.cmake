# cmake/KfuseDeps.cmake — finds kfuse's dependencies and defines interface
# targets for them:
#   kfuse_zip         libzip + minizip (entry offsets for mapping weights)
#   kfuse_cjson       cJSON
#   kfuse_mlir_capi   the MLIR C API (archives + libMLIR/libLLVM, or, with
#                     KFUSE_PORTABLE, every static MLIR/LLVM archive)
# and kfuse_finish_executable(t), which sets rpaths or static link flags.
# Dependencies come from Debian packages (scripts/deps.sh installs them).

find_package(PkgConfig REQUIRED)

set(KFUSE_LLVM_ROOT "/usr/lib/llvm-22" CACHE PATH "LLVM/MLIR 22 installation")
list(APPEND CMAKE_PREFIX_PATH ${KFUSE_LLVM_ROOT})

pkg_check_modules(LIBZIP IMPORTED_TARGET libzip>=1.7)
pkg_check_modules(MINIZIP IMPORTED_TARGET minizip)
find_package(cJSON 1.7 CONFIG QUIET)
if(NOT LIBZIP_FOUND OR NOT MINIZIP_FOUND OR NOT cJSON_FOUND)
  message(FATAL_ERROR "kfuse: libzip, minizip or cJSON is missing. "
    "Run scripts/deps.sh (Debian: libzip-dev libminizip-dev libcjson-dev).")
endif()

add_library(kfuse_zip INTERFACE)
add_library(kfuse_cjson INTERFACE)
# Debian ships no static libzip or cJSON: the portable build carries their
# shared libraries beside the binary (scripts/portable.sh, rpath $ORIGIN/lib).
# zlib (libzip's own dependency) for the CRC of mapped weight records
find_package(ZLIB REQUIRED)
target_link_libraries(kfuse_zip INTERFACE PkgConfig::LIBZIP PkgConfig::MINIZIP ZLIB::ZLIB)
# minizip's include dir holds its own zip.h, which would shadow libzip's:
# sources include <minizip/unzip.h> instead, so drop its cflags.
set_target_properties(PkgConfig::MINIZIP PROPERTIES INTERFACE_INCLUDE_DIRECTORIES "")
target_link_libraries(kfuse_cjson INTERFACE cjson)

find_package(MLIR 22.1 CONFIG QUIET)
if(NOT MLIR_FOUND)
  message(FATAL_ERROR "kfuse: MLIR 22.1 not found under ${KFUSE_LLVM_ROOT}. "
    "Run scripts/deps.sh (Debian: llvm-22-dev libmlir-22-dev mlir-22-tools).")
endif()

add_library(kfuse_mlir_capi INTERFACE)
target_include_directories(kfuse_mlir_capi SYSTEM INTERFACE ${MLIR_INCLUDE_DIRS} ${LLVM_INCLUDE_DIRS})
set(_capi)
foreach(c IR RegisterEverything Transforms Func)
  list(APPEND _capi ${LLVM_LIBRARY_DIR}/libMLIRCAPI${c}.a)
endforeach()
if(KFUSE_PORTABLE)
  # Every static MLIR and LLVM archive in one group; the linker keeps only
  # the objects that are used (docs/ARCHITECTURE.md, "Portable build").
  file(GLOB _mlir_a ${LLVM_LIBRARY_DIR}/libMLIR*.a)
  list(FILTER _mlir_a EXCLUDE REGEX "libMLIRCAPI|Main\\.a$|libMLIR\\.a$")
  file(GLOB _llvm_a ${LLVM_LIBRARY_DIR}/libLLVM*.a)
  list(FILTER _llvm_a EXCLUDE REGEX "libLLVM\\.a$")
  find_library(KFUSE_ZSTD_STATIC NAMES libzstd.a)
  target_link_libraries(kfuse_mlir_capi INTERFACE
    -Wl,--start-group ${_capi} ${_mlir_a} ${_llvm_a} -Wl,--end-group
    ${KFUSE_ZSTD_STATIC} z rt dl m pthread)
else()
  target_link_libraries(kfuse_mlir_capi INTERFACE ${_capi} MLIR LLVM)
endif()

# The LLVM C API (object emission, BLAKE3): libLLVM.so, or in the portable
# build the static archives already linked through kfuse_mlir_capi.
add_library(kfuse_llvm INTERFACE)
target_include_directories(kfuse_llvm SYSTEM INTERFACE ${LLVM_INCLUDE_DIRS})
if(NOT KFUSE_PORTABLE)
  target_link_libraries(kfuse_llvm INTERFACE LLVM)
endif()

function(kfuse_finish_executable t)
  if(KFUSE_PORTABLE)
    target_link_options(${t} PRIVATE -static-libstdc++ -static-libgcc -Wl,--gc-sections)
    set_target_properties(${t} PROPERTIES BUILD_RPATH "\$ORIGIN/lib" INSTALL_RPATH "\$ORIGIN/lib")
  else()
    set_target_properties(${t} PROPERTIES BUILD_RPATH ${LLVM_LIBRARY_DIR}
                                          INSTALL_RPATH ${LLVM_LIBRARY_DIR})
  endif()
endfunction()

# The CUDA 13 toolkit (NVRTC, cuBLASLt, headers). kfuse never links the
# driver: it loads libcuda.so.1 at run time, so it builds and runs
# compile-only on machines without a GPU.
find_package(CUDAToolkit 13 QUIET)
if(NOT CUDAToolkit_FOUND)
  message(FATAL_ERROR "kfuse: the CUDA 13 toolkit was not found (looked for nvcc "
    "on PATH and in /usr/local/cuda). Install it or pass -DCUDAToolkit_ROOT=<dir>.")
endif()
message(STATUS "kfuse: CUDA ${CUDAToolkit_VERSION} at ${CUDAToolkit_BIN_DIR}")
