'use strict';
// The package versions galloc-rn supports, with what it edits in each and the sha256 of the
// pristine files (as npm serves the tarball), so that a change by anyone else is refused.
//
//   ggmlDir      where ggml-alloc.c lives; ggml-alloc.cpp goes beside it
//   ggmlHeader   the ggml.h whose `PREFIX_ggml_init` gives the renaming prefix ('' = none)
//   prefix       the prefix that header must give (checked, so a changed tree is noticed)
//   lineEdits    files that list ggml-alloc.c by name: that one line becomes ggml-alloc.cpp
//                (the Android CMake file; iOS's CMakeLists.txt, which builds the prebuilt
//                framework, where it has one; no podspec lists the file by name)
//   shareEdits   the package's own code that share groups need (edits.js, SHARE_EDITS), each
//                {kind, file, sha256}: 'whisper-state' (whisper.cpp: a share group around
//                whisper_init_state), 'llama-context' (llama-context.cpp: a context stays in the
//                group it was made in, where llama.cpp makes schedulers again and reuses graphs)
//                'llama-rn-context' (rn-llama.cpp: the target's and the MTP draft's contexts and
//                mtmd's encoder made in their llama.rn context's group) and 'llama-rn-mtmd'
//                (rn-mtmd.hpp: the target waited for before an encode); none where the
//                package's ggml lacks the ggml_gallocr API
//   buildFromSource  what the developer must set so that the app compiles the package's C++
//   rebuild      how the changed C++ gets compiled, where it is not the native app's build

const RNLLAMA_FROM_SOURCE = {
  gradleProperty: 'rnllamaBuildFromSource', // android/build.gradle: project.findProperty(...)
  ios: 'RNLLAMA_BUILD_FROM_SOURCE=1 pod install', // llama-rn.podspec: ENV["RNLLAMA_BUILD_FROM_SOURCE"]
};

const VERSIONS = [
  {
    name: 'whisper.rn',
    version: '0.4.0-rc.8',
    ggmlDir: 'cpp',
    ggmlHeader: 'cpp/ggml.h',
    prefix: 'wsp',
    ggmlAllocSha256: 'b23752c4994dbf5877931690bc6f7e40532fc9223e084195f82b14446b569f09',
    lineEdits: [
      {
        file: 'android/src/main/CMakeLists.txt',
        line: '    ${RNWHISPER_LIB_DIR}/ggml-alloc.c',
        sha256: 'c867916b8f07bc6928c3adfa514a548ca0f300c0bdf985ea65f679a59ae72093',
      },
    ],
    // 2023 ggml_allocr API: galloc has no share groups there.
    shareEdits: [],
    buildFromSource: { gradleProperty: null, ios: null },
  },
  {
    name: 'whisper.rn',
    version: '0.4.0-rc.10',
    ggmlDir: 'cpp',
    ggmlHeader: 'cpp/ggml.h',
    prefix: 'wsp',
    ggmlAllocSha256: '8cde84e08cb6dd63ae95428cd705c0e7b7f009c01348c54f7325a64958f7c790',
    lineEdits: [
      {
        file: 'android/src/main/CMakeLists.txt',
        line: '    ${RNWHISPER_LIB_DIR}/ggml-alloc.c',
        sha256: 'e12872b2ed882b5bd887646ae2d16d9eba378e72a96b0d3da3901868d24191d7',
      },
    ],
    shareEdits: [
      {
        kind: 'whisper-state',
        file: 'cpp/whisper.cpp',
        sha256: '512d2d2ed0b6750ee7cd2ed52098c999d84310d81611dd1ee166f37fac79fec7',
      },
    ],
    buildFromSource: { gradleProperty: null, ios: null },
  },
  {
    name: 'whisper.rn',
    version: '0.7.4',
    ggmlDir: 'cpp',
    ggmlHeader: 'cpp/ggml.h',
    prefix: 'wsp',
    ggmlAllocSha256: 'feb32db47b58add2a3fd72ff362d2fafbcbbc51388cdbb24cc63b6542596e762',
    lineEdits: [
      {
        file: 'android/src/main/CMakeLists.txt',
        line: '    ${RNWHISPER_LIB_DIR}/ggml-alloc.c',
        sha256: '030222aa57c8ae6134f7c7214ad5689163f68e1c48b3cc468fa19c88c77f187d',
      },
      {
        file: 'ios/CMakeLists.txt',
        line: '    ${SOURCE_DIR}/ggml-alloc.c',
        sha256: '5c26d37ba0cecd500e39a25669317ee15b68f4e6f649d39f112fcea5c3131bfa',
      },
    ],
    shareEdits: [
      {
        kind: 'whisper-state',
        file: 'cpp/whisper.cpp',
        sha256: '4eeac03d31372e34193f670394de19e625c87878743ca90d39da398c20ace4a6',
      },
    ],
    // whisper-rn.podspec: ENV["RNWHISPER_BUILD_FROM_SOURCE"]; Android always builds from source.
    buildFromSource: { gradleProperty: null, ios: 'RNWHISPER_BUILD_FROM_SOURCE=1 pod install' },
  },
  {
    name: 'llama.rn',
    version: '0.12.9',
    ggmlDir: 'cpp',
    ggmlHeader: 'cpp/ggml.h',
    prefix: 'lm',
    ggmlAllocSha256: 'cc0f1dde8fbee4e979011311115022a4e37bec8b71c0b764e5a210744fb7416b',
    lineEdits: [
      {
        file: 'android/src/main/rnllama/CMakeLists.txt',
        line: '    ${RNLLAMA_LIB_DIR}/ggml-alloc.c',
        sha256: '86c66eee63d02abaaa019e8dbfa130ee5601d1462418410dc1c328a70898e86c',
      },
      {
        file: 'ios/CMakeLists.txt',
        line: '    ${SOURCE_DIR}/ggml-alloc.c',
        sha256: '28b1a301e9d96c1fa2864e738f143852c8998f47627a0385df2ca726b9f3251a',
      },
    ],
    shareEdits: [
      {
        kind: 'llama-context',
        file: 'cpp/llama-context.cpp',
        sha256: '0821a5fc1726e348b27dff25e29414a44313ca49a07b11029994c3c13fbfb2ee',
      },
      {
        kind: 'llama-rn-context',
        file: 'cpp/rn-llama.cpp',
        sha256: '475fc27aa2a0507d0a3c25b799cc578515e844a55750d4256b72cc69c93aaff4',
      },
      {
        kind: 'llama-rn-mtmd',
        file: 'cpp/rn-mtmd.hpp',
        sha256: '26e39f648a9bf51fc38465e8d31dad99bd3cf433b5d48ef2690cb27cb9f67f50',
      },
    ],
    buildFromSource: RNLLAMA_FROM_SOURCE,
  },
  {
    name: 'llama.rn',
    version: '0.13.0-rc.5',
    // llama.cpp's own tree, unrenamed
    ggmlDir: 'vendor/llama.cpp/ggml/src',
    ggmlHeader: 'vendor/llama.cpp/ggml/include/ggml.h',
    prefix: '',
    ggmlAllocSha256: '213b48d6ef6d6ffef55c438db837116105de72cdae3dd152673035e61508d384',
    lineEdits: [
      {
        // included by the Android and the iOS CMake files
        file: 'cmake/rnllama-sources.cmake',
        line: '    ${_ggml}/ggml-alloc.c',
        sha256: '1316142420661c268657b9f32d22f922952af93999853d8b3c9f42ba3362ec4a',
      },
    ],
    shareEdits: [
      {
        kind: 'llama-context',
        file: 'vendor/llama.cpp/src/llama-context.cpp',
        sha256: '21340d0540c6ca98b78b733906f026a7ded450b283e47c3d1c9a84a19de43132',
      },
      {
        kind: 'llama-rn-context',
        file: 'cpp/rn-llama.cpp',
        sha256: '4945b25fe7a4774a2a086f55798e70cf4178a11029f764c25692e8bad832dce3',
      },
      {
        kind: 'llama-rn-mtmd',
        file: 'cpp/rn-mtmd.hpp',
        sha256: '3f0512f398a30d10d466b9a4736dedd31758fb2250dcebf164dc07dd99fab4e0',
      },
    ],
    buildFromSource: RNLLAMA_FROM_SOURCE,
  },
  {
    name: 'cui-llama.rn',
    version: '1.6.0',
    ggmlDir: 'cpp',
    ggmlHeader: 'cpp/ggml.h',
    prefix: 'lm',
    ggmlAllocSha256: 'c1d09b068d4cc639311eed3bd1252ea2c7e8c5db13c6f847d0dd708918c26c3d',
    lineEdits: [
      {
        file: 'android/src/main/CMakeLists.txt',
        line: '    ${RNLLAMA_LIB_DIR}/ggml-alloc.c',
        sha256: '30ea67943865d9576295f8cff0bbe268ca14d4994d475e404379263b7bbd46ff',
      },
      {
        file: 'ios/CMakeLists.txt',
        line: '    ${SOURCE_DIR}/ggml-alloc.c',
        sha256: '5293b13b074f0a33b89386272e2b8f43d7a15fb0f9be02463d4d3a69cf1cc517',
      },
    ],
    // llama.cpp without graph reuse, its scheduler made once with the context: a group opened
    // around llama_init_from_model needs nothing more
    shareEdits: [],
    buildFromSource: RNLLAMA_FROM_SOURCE,
  },
  {
    name: 'cui-llama.rn',
    version: '1.12.2',
    ggmlDir: 'cpp',
    ggmlHeader: 'cpp/ggml.h',
    prefix: 'lm',
    ggmlAllocSha256: 'cc0f1dde8fbee4e979011311115022a4e37bec8b71c0b764e5a210744fb7416b',
    lineEdits: [
      {
        file: 'android/src/main/rnllama/CMakeLists.txt',
        line: '    ${RNLLAMA_LIB_DIR}/ggml-alloc.c',
        sha256: '3419ffbc101592e35e4a67cc4a773ab61f3ed577a92875e627b47c8067e0b8f1',
      },
      {
        file: 'ios/CMakeLists.txt',
        line: '    ${SOURCE_DIR}/ggml-alloc.c',
        sha256: 'c831e22f7b4a6ac448c9e0c3701256dec3c228db02d48cc03506a9f5cc5f9c82',
      },
    ],
    shareEdits: [
      {
        kind: 'llama-context',
        file: 'cpp/llama-context.cpp',
        sha256: 'd1afbf228d4612e5bbce4f6cb76b52b5c07f7dd41fb0ba48964e48d93da3e78d',
      },
      {
        kind: 'llama-rn-context',
        file: 'cpp/rn-llama.cpp',
        sha256: 'fe5f98666304b12b1fdd62b369c7d56206eddcfe0578df3a92bd91c6263b82f1',
      },
      {
        kind: 'llama-rn-mtmd',
        file: 'cpp/rn-mtmd.hpp',
        sha256: '26e39f648a9bf51fc38465e8d31dad99bd3cf433b5d48ef2690cb27cb9f67f50',
      },
    ],
    buildFromSource: RNLLAMA_FROM_SOURCE,
  },
  {
    // whisper.cpp's own tree (ggml 0.15.1, with ggml-rpc), unrenamed; Node builds it with
    // CMake on the user's machine (`npx nodejs-whisper download`)
    name: 'nodejs-whisper',
    version: '0.3.1',
    ggmlDir: 'cpp/whisper.cpp/ggml/src',
    ggmlHeader: 'cpp/whisper.cpp/ggml/include/ggml.h',
    prefix: '',
    ggmlAllocSha256: '881083e2f5d0126738ffe5b246d60cacf7db7b524f1ea471f116697c3211026a',
    lineEdits: [
      {
        file: 'cpp/whisper.cpp/ggml/src/CMakeLists.txt',
        line: '            ggml-alloc.c',
        sha256: '18e33f23ab45ea89d4583142b05a196cd00bb789b323966214f097b493670160',
      },
    ],
    shareEdits: [
      {
        kind: 'whisper-state',
        file: 'cpp/whisper.cpp/src/whisper.cpp',
        sha256: 'a884ff3eb3bbf7558958c4d06a299cd8d97d87a7d5c7aac9138b8ff6a2ef04d7',
      },
    ],
    buildFromSource: { gradleProperty: null, ios: null },
    rebuild: 'rebuild nodejs-whisper\'s whisper.cpp: `npx nodejs-whisper download` does (its CMake build in ' +
      'node_modules/nodejs-whisper/cpp/whisper.cpp/build)',
  },
];

const PACKAGE_NAMES = [...new Set(VERSIONS.map((v) => v.name))];

function supportedVersions(name) {
  return VERSIONS.filter((v) => v.name === name).map((v) => v.version);
}

function findVersion(name, version) {
  return VERSIONS.find((v) => v.name === name && v.version === version) || null;
}

module.exports = { VERSIONS, PACKAGE_NAMES, supportedVersions, findVersion };
