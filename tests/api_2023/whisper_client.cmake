# whisper.cpp from whisper.rn 0.4.0-rc.8 (the ggml_allocr API generation), the real client of
# the drop-in on the 2023 API: a random-weight model at whisper's base dimensions encodes a synthetic
# signal and decodes a few tokens, once on libggml-stock.a and once on libggml-galloc.a
# (whisper_client.cpp), compared by tests/dropin/compare.cmake. The same client at tiny's
# dimensions runs in the packages test, on the package's ggml as it ships.
#
# Included from tests/api_2023/CMakeLists.txt, which defines GALLOC_GGML_2023_API_DIR (the output of
# integrations/ggml/build.sh), GALLOC_GGML_SCRIPTS (integrations/ggml), GALLOC_WARNINGS and the
# target galloc_dropin_lib_api_2023 (which builds ${GALLOC_GGML_2023_API_DIR}/libggml-galloc.a).
# GALLOC_DROPIN_WHISPER=OFF (tests/dropin's option) skips it.
function(galloc_add_api_2023_whisper_client_test dir)
  galloc_ggml_build(${dir} spec build_name)
  if((DEFINED GALLOC_DROPIN_WHISPER AND NOT GALLOC_DROPIN_WHISPER) OR NOT TARGET galloc_dropin_lib_api_2023
     OR NOT spec)
    return()
  endif()
  if(NOT spec MATCHES "^whisper\\.rn@")
    message(WARNING "${dir} holds ggml from ${spec}, not whisper.rn; skipping the 2023 API whisper.cpp tests")
    return()
  endif()
  add_custom_target(galloc_api_2023_whisper ALL
    COMMAND ${GALLOC_GGML_SCRIPTS}/build-whisper.sh ${spec} ${dir}
    BYPRODUCTS ${dir}/whisper/libwhisper.a
    COMMENT "whisper.cpp from ${spec} into ${dir}/whisper/libwhisper.a"
    VERBATIM)
  # build.sh may reinstall the headers whisper.cpp compiles against: build whisper.cpp after it
  add_dependencies(galloc_api_2023_whisper galloc_dropin_lib_api_2023)
  # test_support.hpp is the drop-in tests' (failing, hashing, the random generator); --wrap: to
  # hash every graph's results after it ran and read the exact buffer sizes (see the client)
  galloc_add_stock_galloc_programs(galloc_api_2023_whisper_client ${CMAKE_CURRENT_FUNCTION_LIST_DIR}/whisper_client.cpp
    DIR ${dir} INCLUDES ${CMAKE_CURRENT_FUNCTION_LIST_DIR}/../dropin
    SYSTEM_INCLUDES ${dir}/whisper/include ${dir}/include LIBRARIES ${dir}/whisper/libwhisper.a
    LINK_OPTIONS -Wl,--wrap=ggml_backend_graph_compute -Wl,--wrap=ggml_allocr_max_size
                 -Wl,--wrap=ggml_allocr_new_from_buffer
    DEPENDS galloc_api_2023_whisper)
  # base: 6 layers of 512, about 41 s a run on one core
  foreach(size base)
    set(out ${CMAKE_CURRENT_BINARY_DIR}/whisper_cpp_${size})
    add_test(NAME api_2023_whisper_cpp_${size}
      COMMAND ${CMAKE_COMMAND} -DSTOCK=$<TARGET_FILE:galloc_api_2023_whisper_client_stock>
              -DGALLOC=$<TARGET_FILE:galloc_api_2023_whisper_client_galloc> -DOUT=${out}
              "-DARGS=${out}/${size}-whisper.bin$<SEMICOLON>${size}" -DGGML_SIZES=ANY
              -P ${CMAKE_CURRENT_FUNCTION_LIST_DIR}/../dropin/compare.cmake)
    # COST: started among the long tests on a fresh machine, not last, where it ran alone
    set_tests_properties(api_2023_whisper_cpp_${size} PROPERTIES LABELS dropin TIMEOUT 600 COST 150)
  endforeach()
endfunction()

if(GALLOC_GGML_2023_API_DIR)
  find_package(Threads REQUIRED)
  galloc_add_api_2023_whisper_client_test(${GALLOC_GGML_2023_API_DIR})
endif()
