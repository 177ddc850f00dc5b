// rapidcheck generators for graph descriptions. Every field shrinks toward 0 (the most recent
// tensor, the first op, the default buffer type) and the vectors shrink by dropping elements.
#pragma once

#include <rapidcheck.h>

#include "property/graph_desc.hpp"

namespace galloc::property {

// Uniform in [0, max_inclusive] whatever the size (rapidcheck's inRange scales with it), so a
// field is as varied in the first cases as in the last; shrinks toward 0.
inline rc::Gen<std::uint8_t> small(int max_inclusive) {
  return rc::gen::resize(100, rc::gen::map(rc::gen::inRange<int>(0, max_inclusive + 1),
                                           [](int v) { return static_cast<std::uint8_t>(v); }));
}

inline rc::Gen<TypeDesc> gen_type_desc() {
  return rc::gen::build<TypeDesc>(
      rc::gen::set(&TypeDesc::alignment, small(9)),
      rc::gen::set(&TypeDesc::max_size,
                   rc::gen::weightedOneOf<std::uint8_t>({{1, rc::gen::just<std::uint8_t>(0)}, {2, small(7)}})),
      rc::gen::set(&TypeDesc::padding,
                   rc::gen::weightedOneOf<std::uint8_t>({{3, rc::gen::just<std::uint8_t>(0)}, {1, small(40)}})));
}

inline rc::Gen<LeafDesc> gen_leaf_desc() {
  return rc::gen::build<LeafDesc>(
      rc::gen::set(&LeafDesc::kind,
                   rc::gen::element(LeafKind::kInput, LeafKind::kWeights, LeafKind::kPlain, LeafKind::kOutside)),
      rc::gen::set(&LeafDesc::type, small(3)), rc::gen::set(&LeafDesc::shape, small(11)),
      rc::gen::set(&LeafDesc::output, rc::gen::weightedElement<bool>({{9, false}, {1, true}})),
      rc::gen::set(&LeafDesc::buffer, small(3)));
}

inline rc::Gen<NodeDesc> gen_node_desc() {
  // References: mostly recent tensors (chains, in-place candidates), sometimes far back.
  const auto ref = rc::gen::weightedOneOf<std::uint8_t>({{4, small(2)}, {1, small(255)}});
  return rc::gen::build<NodeDesc>(
      rc::gen::set(&NodeDesc::kind, rc::gen::weightedElement<NodeKind>({{5, NodeKind::kElementwise},
                                                                        {2, NodeKind::kOther},
                                                                        {3, NodeKind::kView},
                                                                        {2, NodeKind::kWriteView},
                                                                        {1, NodeKind::kDependency}})),
      rc::gen::set(&NodeDesc::op, small(9)), rc::gen::set(&NodeDesc::n_src, small(2)),
      rc::gen::set(&NodeDesc::src,
                   rc::gen::map(rc::gen::tuple(ref, ref, ref),
                                [](const std::tuple<std::uint8_t, std::uint8_t, std::uint8_t>& t) {
                                  return std::array<std::uint8_t, 3>{std::get<0>(t), std::get<1>(t), std::get<2>(t)};
                                })),
      rc::gen::set(&NodeDesc::layout, small(5)), rc::gen::set(&NodeDesc::type, small(3)),
      rc::gen::set(&NodeDesc::shape, small(11)), rc::gen::set(&NodeDesc::window_offs, small(255)),
      rc::gen::set(&NodeDesc::window_len, small(255)),
      rc::gen::set(&NodeDesc::output, rc::gen::weightedElement<bool>({{8, false}, {1, true}})),
      rc::gen::set(&NodeDesc::input, rc::gen::weightedElement<bool>({{15, false}, {1, true}})),
      rc::gen::set(&NodeDesc::buffer, small(3)));
}

inline rc::Gen<GraphDesc> gen_graph_desc() {
  return rc::gen::build<GraphDesc>(
      rc::gen::set(&GraphDesc::types, rc::gen::resize(3, rc::gen::container<std::vector<TypeDesc>>(gen_type_desc()))),
      rc::gen::set(&GraphDesc::id_types, rc::gen::resize(4, rc::gen::container<std::vector<std::uint8_t>>(small(3)))),
      rc::gen::set(&GraphDesc::leafs, rc::gen::scale(0.1, rc::gen::container<std::vector<LeafDesc>>(gen_leaf_desc()))),
      rc::gen::set(&GraphDesc::nodes, rc::gen::scale(0.6, rc::gen::container<std::vector<NodeDesc>>(gen_node_desc()))));
}

}  // namespace galloc::property
