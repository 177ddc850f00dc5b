# The 2023 allocator API of whisper.rn 0.4.0-rc.8 (ggml_allocr_*, ggml_tallocr_*, the first
# ggml_gallocr) on random graphs and on each of its behaviours (legacy_graphs.cpp), once on
# libggml-stock.a and twice on libggml-galloc.a (GALLOC_STRATEGY=ggml and best), compared by
# tests/dropin/compare.cmake.
#
# Included from tests/legacy/CMakeLists.txt, which defines GALLOC_GGML_LEGACY_DIR (the output of
# integrations/ggml/build.sh), GALLOC_WARNINGS and the target galloc_dropin_lib_legacy (which
# builds ${GALLOC_GGML_LEGACY_DIR}/libggml-galloc.a).
find_package(Threads REQUIRED)
foreach(kind stock galloc)
  set(exe galloc_legacy_graphs_${kind})
  add_executable(${exe} ${CMAKE_CURRENT_LIST_DIR}/legacy_graphs.cpp)
  # test_support.hpp is the drop-in tests' (failing, hashing, the random generator)
  target_include_directories(${exe} PRIVATE ${GALLOC_GGML_LEGACY_DIR}/include ${CMAKE_CURRENT_LIST_DIR}/../dropin)
  target_include_directories(${exe} SYSTEM PRIVATE ${GALLOC_GGML_LEGACY_DIR}/include/internal)
  target_link_libraries(${exe} PRIVATE ${GALLOC_GGML_LEGACY_DIR}/libggml-${kind}.a Threads::Threads m dl)
  target_compile_options(${exe} PRIVATE ${GALLOC_WARNINGS})
  # build.sh may rebuild libggml-stock.a and reinstall the headers too (when build.sh itself
  # changed): both programs build after it
  add_dependencies(${exe} galloc_dropin_lib_legacy)
endforeach()

add_test(NAME legacy_graphs
  COMMAND ${CMAKE_COMMAND} -DSTOCK=$<TARGET_FILE:galloc_legacy_graphs_stock>
          -DGALLOC=$<TARGET_FILE:galloc_legacy_graphs_galloc> -DOUT=${CMAKE_CURRENT_BINARY_DIR}/legacy_graphs
          -DGGML_SIZES=ANY -P ${CMAKE_CURRENT_LIST_DIR}/../dropin/compare.cmake)
set_tests_properties(legacy_graphs PROPERTIES LABELS dropin TIMEOUT 300)
