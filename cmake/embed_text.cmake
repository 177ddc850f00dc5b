# cmake -DINPUT=FILE -DOUTPUT=HEADER -DNAME=[NAMESPACE::]SYMBOL -P embed_text.cmake
#
# Writes HEADER, which defines `constexpr char SYMBOL[]` (in NAMESPACE, if given) holding
# FILE's bytes as they are, so that a page's CSS and script are edited as real files and still
# ship inside the library.
foreach(var INPUT OUTPUT NAME)
  if(NOT DEFINED ${var})
    message(FATAL_ERROR "embed_text.cmake: -D${var}= is required")
  endif()
endforeach()

file(READ "${INPUT}" content)
# A raw string literal holds anything but its own end.
set(delimiter "galloc_text")
string(FIND "${content}" ")${delimiter}\"" clash)
if(NOT clash EQUAL -1)
  message(FATAL_ERROR "embed_text.cmake: ${INPUT} contains )${delimiter}\", which would end the literal")
endif()

set(open "")
set(close "")
set(symbol "${NAME}")
if(NAME MATCHES "^(.+)::([^:]+)$")
  set(open "namespace ${CMAKE_MATCH_1} {\n\n")
  set(close "\n}  // namespace ${CMAKE_MATCH_1}\n")
  set(symbol "${CMAKE_MATCH_2}")
endif()
get_filename_component(source "${INPUT}" NAME)
file(WRITE "${OUTPUT}"
  "// Generated from ${source} by cmake/embed_text.cmake at build time; edit ${source}.\n"
  "#pragma once\n\n${open}"
  "constexpr char ${symbol}[] = R\"${delimiter}(${content})${delimiter}\";\n${close}")
