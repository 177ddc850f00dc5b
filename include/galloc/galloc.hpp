// Everything of galloc's C++ API in one include.
#pragma once

#include "galloc/buffer.hpp"
#include "galloc/dynamic_allocator.hpp"
#include "galloc/extents.hpp"
#include "galloc/graph.hpp"
#include "galloc/graph_allocator.hpp"
#include "galloc/lifetimes.hpp"
#include "galloc/linear_allocator.hpp"
#include "galloc/placement.hpp"
#include "galloc/plan.hpp"
#include "galloc/planner.hpp"
#include "galloc/shared_arena.hpp"
#include "galloc/status.hpp"
#include "galloc/types.hpp"
#include "galloc/validator.hpp"
