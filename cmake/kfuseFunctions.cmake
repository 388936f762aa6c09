# kfuseFunctions.cmake — compiling models at build time (shipped with the
# kfuse CMake package; docs/BUILD.md is the user's guide).
#
#   kfuse_add_model(TARGET name MODEL model.pt2
#                   [PRECISION default|tf32|bf16|fp16|fp32] [TARGET_ARCH sm_90|sm_90a]
#                   [CACHE dir] [EMBED_WEIGHTS] [PREFIX c_name]
#                   [WEIGHTS_DIR dir] [OPTIONS kfuse-compile-flags...])
#
# runs `kfuse compile MODEL --emit obj --prefix PREFIX` at build time and
# makes `name` a STATIC library of the object module: linking it gives a
# target its header (<name>.h, declaring PREFIX_create and the module API),
# the object and kfuse::runtime, so it links like any other library and
# several models can share one program (each has its own PREFIX_create).
# The compile re-runs when the model file or the kfuse executable changes.
#
# The weights file (<name>.o.weights, unless EMBED_WEIGHTS) is what the
# object module opens at create, by that name relative to the directory of
# the program (or shared library) it is linked into (docs/DEPLOY.md, "What
# create checks"). It is copied to WEIGHTS_DIR, by default where the
# executables of the calling directory land (CMAKE_RUNTIME_OUTPUT_DIRECTORY,
# else CMAKE_CURRENT_BINARY_DIR); kfuse_copy_weights() puts it beside a
# program elsewhere. The target's KFUSE_WEIGHTS_FILE property names it (for
# install(FILES)); it is empty with EMBED_WEIGHTS.
#
# CACHE dir is passed to kfuse compile as the environment variable
# KFUSE_CACHE_DIR, the kernel cache's directory (issue 12's cache store); a
# kfuse without the cache ignores it.

if(NOT TARGET kfuse::kfuse)
  message(FATAL_ERROR "kfuseFunctions.cmake: load it through find_package(kfuse)")
endif()

function(kfuse_add_model)
  cmake_parse_arguments(PARSE_ARGV 0 arg "EMBED_WEIGHTS"
    "TARGET;MODEL;PRECISION;TARGET_ARCH;CACHE;PREFIX;WEIGHTS_DIR" "OPTIONS")
  if(arg_UNPARSED_ARGUMENTS)
    message(FATAL_ERROR "kfuse_add_model: unknown arguments: ${arg_UNPARSED_ARGUMENTS}")
  endif()
  if(NOT arg_TARGET OR NOT arg_MODEL)
    message(FATAL_ERROR "kfuse_add_model: TARGET name and MODEL file are required")
  endif()
  set(name ${arg_TARGET})
  if(TARGET ${name})
    message(FATAL_ERROR "kfuse_add_model: a target named '${name}' already exists")
  endif()
  get_filename_component(model "${arg_MODEL}" ABSOLUTE BASE_DIR "${CMAKE_CURRENT_SOURCE_DIR}")
  if(NOT EXISTS "${model}")
    message(FATAL_ERROR "kfuse_add_model(${name}): no model file ${model}")
  endif()
  if(arg_PREFIX)
    set(prefix ${arg_PREFIX})
  else()
    string(MAKE_C_IDENTIFIER "${name}" prefix)
  endif()
  if(NOT prefix MATCHES "^[A-Za-z_][A-Za-z0-9_]*$")
    message(FATAL_ERROR "kfuse_add_model(${name}): PREFIX '${prefix}' is not a C identifier")
  endif()

  # the object, its header and weights in a directory of their own (the
  # include directory users get holds nothing else)
  set(dir ${CMAKE_CURRENT_BINARY_DIR}/kfuse_models/${name})
  set(obj ${dir}/${name}.o)
  set(header ${dir}/${name}.h)
  set(report ${dir}/${name}.report.json)
  file(MAKE_DIRECTORY ${dir})

  set(cmd $<TARGET_FILE:kfuse::kfuse> compile ${model} -o ${obj} --emit obj
      --prefix ${prefix} --report ${report} -q)
  if(arg_PRECISION)
    list(APPEND cmd --precision ${arg_PRECISION})
  endif()
  if(arg_TARGET_ARCH)
    list(APPEND cmd --target ${arg_TARGET_ARCH})
  endif()
  if(arg_EMBED_WEIGHTS)
    list(APPEND cmd --embed-weights)
  endif()
  list(APPEND cmd ${arg_OPTIONS})
  if(arg_CACHE)
    get_filename_component(cache "${arg_CACHE}" ABSOLUTE BASE_DIR "${CMAKE_CURRENT_BINARY_DIR}")
    set(cmd ${CMAKE_COMMAND} -E env KFUSE_CACHE_DIR=${cache} ${cmd})
  endif()

  set(outputs ${obj} ${header})
  set(copy)
  set(weights "")
  if(NOT arg_EMBED_WEIGHTS)
    if(arg_WEIGHTS_DIR)
      get_filename_component(wdir "${arg_WEIGHTS_DIR}" ABSOLUTE BASE_DIR "${CMAKE_CURRENT_BINARY_DIR}")
    elseif(CMAKE_RUNTIME_OUTPUT_DIRECTORY)
      set(wdir ${CMAKE_RUNTIME_OUTPUT_DIRECTORY})
    else()
      set(wdir ${CMAKE_CURRENT_BINARY_DIR})
    endif()
    set(weights ${wdir}/${name}.o.weights)
    list(APPEND outputs ${dir}/${name}.o.weights ${weights})
    set(copy COMMAND ${CMAKE_COMMAND} -E make_directory ${wdir}
             COMMAND ${CMAKE_COMMAND} -E copy ${dir}/${name}.o.weights ${weights})
  endif()
  list(REMOVE_DUPLICATES outputs)

  add_custom_command(
    OUTPUT ${outputs}
    BYPRODUCTS ${report}
    COMMAND ${cmd}
    ${copy}
    DEPENDS ${model} $<TARGET_FILE:kfuse::kfuse>
    COMMENT "kfuse: compiling ${arg_MODEL} (${name})"
    VERBATIM)

  add_library(${name} STATIC ${obj} ${header})
  set_target_properties(${name} PROPERTIES
    LINKER_LANGUAGE C
    KFUSE_MODEL ${model}
    KFUSE_PREFIX ${prefix}
    KFUSE_HEADER ${header}
    KFUSE_WEIGHTS_FILE "${weights}")
  target_include_directories(${name} PUBLIC $<BUILD_INTERFACE:${dir}>)
  target_link_libraries(${name} PUBLIC kfuse::runtime)
endfunction()

# kfuse_copy_weights(TARGET program MODELS model...): after each build of
# program, copy each model's weights file beside it (for programs whose
# directory is not the model's WEIGHTS_DIR).
function(kfuse_copy_weights)
  cmake_parse_arguments(PARSE_ARGV 0 arg "" "TARGET" "MODELS")
  if(NOT arg_TARGET OR NOT arg_MODELS)
    message(FATAL_ERROR "kfuse_copy_weights: TARGET program and MODELS are required")
  endif()
  foreach(m ${arg_MODELS})
    get_target_property(w ${m} KFUSE_WEIGHTS_FILE)
    if(NOT w)
      continue() # embedded weights, or not a kfuse model
    endif()
    add_custom_command(TARGET ${arg_TARGET} POST_BUILD
      COMMAND ${CMAKE_COMMAND} -E copy_if_different ${w} $<TARGET_FILE_DIR:${arg_TARGET}>
      VERBATIM)
    add_dependencies(${arg_TARGET} ${m})
  endforeach()
endfunction()
