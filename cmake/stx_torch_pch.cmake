# Precompiled LibTorch headers (cmake/torch_precompiled.h): built once for the libraries and once for the
# executables, and reused by every other target with sources that reach LibTorch. Only those sources get it; the rest skip it, since loading
# the half-gigabyte header costs a file that needs none of it more than compiling the file itself.
#
#   stx_torch_pch(target)   after add_library/add_executable of a target that links LibTorch
#
# A source reaches LibTorch when it includes <ATen/...>, <torch/...> or <c10/...>, or one of our headers
# that does (directly or through another of ours): found by reading the files at configure time.
option(STX_PRECOMPILED_HEADERS "stx: precompile the LibTorch headers for the sources that use them" ON)

set(STX_TORCH_INCLUDE_REGEX "#include <(ATen|torch|c10)/")

# The base names of our headers that reach LibTorch, as a regex alternative ("sparse_transformer\\.h|...").
function(stx_find_torch_headers out)
  file(GLOB_RECURSE headers ${CMAKE_SOURCE_DIR}/engine/*.h ${CMAKE_SOURCE_DIR}/models/*.h
       ${CMAKE_SOURCE_DIR}/app/cli/*.h ${CMAKE_SOURCE_DIR}/bench/*.h ${CMAKE_SOURCE_DIR}/tests/*.h)
  set(found "")
  set(changed TRUE)
  while(changed)
    set(changed FALSE)
    foreach(header ${headers})
      get_filename_component(name ${header} NAME)
      string(REPLACE "." "\\." name_regex ${name})
      if(name_regex IN_LIST found)
        continue()
      endif()
      file(READ ${header} text)
      set(reaches FALSE)
      if(text MATCHES "${STX_TORCH_INCLUDE_REGEX}")
        set(reaches TRUE)
      elseif(found)
        list(JOIN found "|" alternatives)
        if(text MATCHES "#include [<\"]([^>\"]*/)?(${alternatives})[>\"]")
          set(reaches TRUE)
        endif()
      endif()
      if(reaches)
        list(APPEND found ${name_regex})
        set(changed TRUE)
      endif()
    endforeach()
  endwhile()
  list(JOIN found "|" alternatives)
  set(${out} "${alternatives}" PARENT_SCOPE)
endfunction()

function(stx_torch_pch target)
  if(NOT STX_PRECOMPILED_HEADERS)
    return()
  endif()
  get_property(known GLOBAL PROPERTY STX_TORCH_HEADERS SET)
  if(NOT known)  # once per configure
    stx_find_torch_headers(alternatives)
    set_property(GLOBAL PROPERTY STX_TORCH_HEADERS "${alternatives}")
  endif()
  get_property(alternatives GLOBAL PROPERTY STX_TORCH_HEADERS)
  get_target_property(sources ${target} SOURCES)
  get_target_property(source_dir ${target} SOURCE_DIR)
  foreach(source ${sources})
    if(NOT source MATCHES "\\.cpp$")
      continue()
    endif()
    if(NOT IS_ABSOLUTE ${source})
      set(source ${source_dir}/${source})
    endif()
    file(READ ${source} text)
    if(NOT (text MATCHES "${STX_TORCH_INCLUDE_REGEX}" OR
            (alternatives AND text MATCHES "#include [<\"]([^>\"]*/)?(${alternatives})[>\"]")))
      set_source_files_properties(${source} TARGET_DIRECTORY ${target} PROPERTIES SKIP_PRECOMPILE_HEADERS ON)
    endif()
  endforeach()
  # A header precompiled for a library (-fPIC) is refused by executables (-fPIE), and the other way round:
  # one for each kind, made by the first target of that kind and reused by the rest.
  get_target_property(type ${target} TYPE)
  if(type STREQUAL "EXECUTABLE")
    set(kind EXECUTABLE)
  else()
    set(kind LIBRARY)
  endif()
  # GCC also refuses a precompiled header made with a macro defined on the command line (STX_VERSION,
  # STX_CLI_PATH) in a file compiled without it, so the executables reuse the header of an empty program
  # that defines nothing of its own. stx_models defines nothing either (STX_TORCH_CUDA only with a CUDA
  # LibTorch, where the engine then parses the headers itself).
  if(kind STREQUAL "EXECUTABLE" AND NOT TARGET stx_torch_pch_owner)
    add_executable(stx_torch_pch_owner ${CMAKE_SOURCE_DIR}/cmake/torch_pch_owner.cpp)
    target_link_libraries(stx_torch_pch_owner PRIVATE stx_models)
    target_precompile_headers(stx_torch_pch_owner PRIVATE ${CMAKE_SOURCE_DIR}/cmake/torch_precompiled.h)
    set_property(GLOBAL PROPERTY STX_TORCH_PCH_OWNER_EXECUTABLE stx_torch_pch_owner)
  endif()
  get_property(owner GLOBAL PROPERTY STX_TORCH_PCH_OWNER_${kind})
  if(owner)
    target_precompile_headers(${target} REUSE_FROM ${owner})
  else()
    target_precompile_headers(${target} PRIVATE ${CMAKE_SOURCE_DIR}/cmake/torch_precompiled.h)
    set_property(GLOBAL PROPERTY STX_TORCH_PCH_OWNER_${kind} ${target})
  endif()
endfunction()
