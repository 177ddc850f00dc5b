# The supported versions as the tests see them, written down independently of galloc-rn's
# lib/versions.js: NAME VERSION GGML_DIR PREFIX SHARE_FILES FILES_WITH_THE_LINE (both
# comma-separated), where SHARE_FILES are the package's own files that share groups edit, or
# "no": whisper.cpp (a share group around each state), llama-context.cpp (a context stays in its
# group), rn-llama.cpp (the target's and the MTP draft's contexts and mtmd's encoder in one group)
# and rn-mtmd.hpp (the target waited for before an encode).
SUPPORTED=(
  "whisper.rn 0.4.0-rc.8 cpp wsp no android/src/main/CMakeLists.txt"
  "whisper.rn 0.4.0-rc.10 cpp wsp cpp/whisper.cpp android/src/main/CMakeLists.txt"
  "whisper.rn 0.7.4 cpp wsp cpp/whisper.cpp android/src/main/CMakeLists.txt,ios/CMakeLists.txt"
  "llama.rn 0.12.9 cpp lm cpp/llama-context.cpp,cpp/rn-llama.cpp,cpp/rn-mtmd.hpp android/src/main/rnllama/CMakeLists.txt,ios/CMakeLists.txt"
  "llama.rn 0.13.0-rc.5 vendor/llama.cpp/ggml/src - vendor/llama.cpp/src/llama-context.cpp,cpp/rn-llama.cpp,cpp/rn-mtmd.hpp cmake/rnllama-sources.cmake"
  "cui-llama.rn 1.6.0 cpp lm no android/src/main/CMakeLists.txt,ios/CMakeLists.txt"
  "cui-llama.rn 1.12.2 cpp lm cpp/llama-context.cpp,cpp/rn-llama.cpp,cpp/rn-mtmd.hpp android/src/main/rnllama/CMakeLists.txt,ios/CMakeLists.txt"
  "nodejs-whisper 0.3.1 cpp/whisper.cpp/ggml/src - cpp/whisper.cpp/src/whisper.cpp cpp/whisper.cpp/ggml/src/CMakeLists.txt"
)
# Apps whose packages can live together (one version of each name per app).
APP_GROUPS=(
  "whisper.rn@0.4.0-rc.8 llama.rn@0.12.9 cui-llama.rn@1.6.0"
  "whisper.rn@0.4.0-rc.10 llama.rn@0.13.0-rc.5 cui-llama.rn@1.12.2"
  "whisper.rn@0.7.4 nodejs-whisper@0.3.1"
)
version_row() {  # version_row NAME VERSION: that row of SUPPORTED
  local r
  for r in "${SUPPORTED[@]}"; do
    read -r n v _ <<<"$r"
    [[ $n == "$1" && $v == "$2" ]] && { echo "$r"; return 0; }
  done
  return 1
}
