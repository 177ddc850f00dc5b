# A ggml build (integrations/ggml/build.sh's OUT_DIR) goes by the npm package version it comes
# from, read from build.sh's stamp: llama.rn@0.12.9 is llama-rn-0.12.9 in target and test
# names. Sources that must know which ggml they are compiled against test the macro
# GALLOC_GGML_<NAME>, for example GALLOC_GGML_WHISPER_RN_0_4_0_RC_10.

# Sets SPEC (llama.rn@0.12.9) and NAME (llama-rn-0.12.9); both empty when DIR holds no build.
function(galloc_ggml_build dir out_spec out_name)
  set(stamp ${dir}/.libggml-stock.stamp)
  set(spec "")
  set(name "")
  if(EXISTS ${stamp})
    file(STRINGS ${stamp} spec_line REGEX "^spec=")
    string(REGEX REPLACE "^spec=" "" spec "${spec_line}")
    string(REPLACE ".rn@" "-rn-" name "${spec}")
  endif()
  set(${out_spec} "${spec}" PARENT_SCOPE)
  set(${out_name} "${name}" PARENT_SCOPE)
endfunction()

# TARGET compiles with GALLOC_GGML_<NAME> of the build in DIR.
function(galloc_ggml_build_definition target dir)
  galloc_ggml_build(${dir} spec name)
  string(TOUPPER "GALLOC_GGML_${name}" macro)
  string(MAKE_C_IDENTIFIER "${macro}" macro)
  target_compile_definitions(${target} PRIVATE ${macro})
endfunction()
