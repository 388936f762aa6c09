# cmake/KfuseInstall.cmake — what `cmake --install BUILD --prefix P` puts
# under P, and the CMake package users load with find_package(kfuse):
#
#   bin/kfuse                          the compiler
#   lib/libkfuse_runtime.a             the runtime every model links
#   include/kfuse_runtime.h            the module API (runtime/kfuse_runtime.h)
#   lib/cmake/kfuse/kfuseConfig.cmake  + kfuseConfigVersion.cmake,
#     kfuseTargets*.cmake (imported kfuse::runtime, kfuse::kfuse) and
#     kfuseFunctions.cmake (kfuse_add_model; docs/BUILD.md)
#
# The directories are fixed (bin, lib, include), not GNUInstallDirs': kfuse
# finds libkfuse_runtime.a at ../lib beside its own bin/ (driver/emit.c), and
# Debian's multiarch lib/x86_64-linux-gnu under /usr would break that. Every
# path in the package is relative to its own location (relocatable).

include(CMakePackageConfigHelpers)
set(KFUSE_INSTALL_CMAKEDIR lib/cmake/kfuse)

set_target_properties(kfuse_runtime PROPERTIES EXPORT_NAME runtime)
if(KFUSE_SANITIZE)
  # an instrumented runtime needs the sanitizer runtimes in the program
  target_link_options(kfuse_runtime INTERFACE $<INSTALL_INTERFACE:-fsanitize=address,undefined>)
endif()

install(TARGETS kfuse EXPORT kfuseTargets RUNTIME DESTINATION bin)
install(TARGETS kfuse_runtime EXPORT kfuseTargets ARCHIVE DESTINATION lib)
install(FILES ${CMAKE_CURRENT_SOURCE_DIR}/runtime/kfuse_runtime.h DESTINATION include)
install(EXPORT kfuseTargets NAMESPACE kfuse:: DESTINATION ${KFUSE_INSTALL_CMAKEDIR})

configure_package_config_file(
  ${CMAKE_CURRENT_SOURCE_DIR}/cmake/kfuseConfig.cmake.in
  ${CMAKE_CURRENT_BINARY_DIR}/package/kfuseConfig.cmake
  INSTALL_DESTINATION ${KFUSE_INSTALL_CMAKEDIR})
# 0.x: a minor version may change the module ABI
write_basic_package_version_file(
  ${CMAKE_CURRENT_BINARY_DIR}/package/kfuseConfigVersion.cmake
  VERSION ${PROJECT_VERSION} COMPATIBILITY SameMinorVersion)
install(FILES
  ${CMAKE_CURRENT_BINARY_DIR}/package/kfuseConfig.cmake
  ${CMAKE_CURRENT_BINARY_DIR}/package/kfuseConfigVersion.cmake
  ${CMAKE_CURRENT_SOURCE_DIR}/cmake/kfuseFunctions.cmake
  DESTINATION ${KFUSE_INSTALL_CMAKEDIR})
