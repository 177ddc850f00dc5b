// The drop-in's environment: GALLOC_STRATEGY (the placement strategy, by name), GALLOC_SHARE and
// GALLOC_SHARE_CHECK (shared compute buffers, with GALLOC_SHARE_DEFAULT, a compile-time define,
// as GALLOC_SHARE's default) and GALLOC_DUMP (a folder for graph files), read and written the
// same way by every ggml API generation. Declarations; the definitions are in dropin_env.cpp.
#pragma once

#include <string>

#include "galloc/placement.hpp"
#include "galloc/status.hpp"

// GALLOC_DROPIN_JSON: galloc's graph file code is compiled in, for GALLOC_DUMP (build.sh
// defines it when galloc's sources have it; amalgamate.sh --with-dump in the file it writes).
#ifdef GALLOC_DROPIN_JSON
#include "galloc/graph_json.hpp"
#endif

namespace {

// GALLOC_STRATEGY, or best when it is unset or empty; a name galloc does not know is an error
// (the caller logs it and uses best).
galloc::Result<galloc::Strategy> strategy_from_env();

// Which allocators share compute buffers: none, those in share groups (galloc_ggml_share_begin),
// or every allocator of the process.
enum class ShareMode { kNone, kGroups, kAll };

// GALLOC_SHARE_DEFAULT: the mode when GALLOC_SHARE is unset, as the name GALLOC_SHARE takes.
// An app's build sets it (galloc-rn writes it at the top of the file), since a phone app cannot
// set environment variables before its native library loads.
#ifndef GALLOC_SHARE_DEFAULT
#define GALLOC_SHARE_DEFAULT "groups"
#endif

// The mode `name` stands for ("0", "groups" or "1"); anything else is an error that names
// `source`, the variable or define it came from.
galloc::Result<ShareMode> share_mode_from_name(const std::string& name, const char* source);

// GALLOC_SHARE, else GALLOC_SHARE_DEFAULT: "0", "groups" or "1". Anything else is an error
// (the caller logs it and shares share groups only).
galloc::Result<ShareMode> share_mode_from_env();

// GALLOC_SHARE_CHECK=1: shared arenas poison what each alloc takes over (SharedArena's checked
// mode).
bool share_check_from_env();

// GALLOC_DUMP: the folder to write graph files to, or "" (no dumps) when it is unset.
std::string dump_dir_from_env();

#ifdef GALLOC_DROPIN_JSON
// Writes `file` as DIR/ggml-<sequence>-<tag>.json. The sequence counts the process's dumps, so
// files sort in the order the graphs were planned, and an allocator made at a freed one's
// address overwrites nothing.
galloc::Status write_dump(const std::string& dir, const std::string& tag, const galloc::GraphFile& file);
#endif

}  // namespace
