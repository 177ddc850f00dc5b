# The programs the drop-in tests compare: one source linked once with stock ggml-alloc.c and
# once with galloc's drop-in (tests/dropin, tests/api_2023).
find_package(Threads REQUIRED)

# SOURCE compiled once (the OBJECT library PREFIX_obj) and linked twice against the ggml build
# DIR: PREFIX_stock with libggml-stock.a and PREFIX_galloc with libggml-galloc.a. INCLUDES and
# SYSTEM_INCLUDES are the compile's, USES targets whose usage requirements it takes (and which
# are linked first), LIBRARIES and LINK_OPTIONS the links', DEPENDS what both wait for.
function(galloc_add_stock_galloc_programs prefix source)
  cmake_parse_arguments(arg "" "DIR" "INCLUDES;SYSTEM_INCLUDES;USES;LIBRARIES;LINK_OPTIONS;DEPENDS" ${ARGN})
  add_library(${prefix}_obj OBJECT ${source})
  target_include_directories(${prefix}_obj PRIVATE ${arg_INCLUDES})
  target_include_directories(${prefix}_obj SYSTEM PRIVATE ${arg_SYSTEM_INCLUDES})
  target_link_libraries(${prefix}_obj PRIVATE ${arg_USES})
  target_compile_options(${prefix}_obj PRIVATE ${GALLOC_WARNINGS})
  galloc_ggml_build_definition(${prefix}_obj ${arg_DIR})
  # build.sh installs the headers it compiles against, and may rebuild libggml-stock.a too
  add_dependencies(${prefix}_obj ${arg_DEPENDS})
  foreach(kind stock galloc)
    add_executable(${prefix}_${kind} $<TARGET_OBJECTS:${prefix}_obj>)
    target_link_libraries(${prefix}_${kind} PRIVATE ${arg_USES} ${arg_LIBRARIES} ${arg_DIR}/libggml-${kind}.a
                                                    Threads::Threads m dl)
    target_link_options(${prefix}_${kind} PRIVATE ${arg_LINK_OPTIONS})
    add_dependencies(${prefix}_${kind} ${arg_DEPENDS})
  endforeach()
endfunction()
