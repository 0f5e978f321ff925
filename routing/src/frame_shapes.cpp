#include "cafmesh/routing/frame_shapes.hpp"

#include <utility>
#include <vector>

#include <caf/make_message.hpp>

#include "cafmesh/actors/frame_codec.hpp"
#include "cafmesh/actors/ids.hpp"
#include "cafmesh/actors/placement_atoms.hpp"
#include "cafmesh/routing/dispatch_batch.hpp"
#include "cafmesh/routing/entry_atoms.hpp"
#include "cafmesh/routing/envelope.hpp"
#include "cafmesh/routing/router_atoms.hpp"

namespace cafmesh::routing {

namespace {

template <class Atom>
bool atom_at(const caf::message& m, size_t i) {
  return m.match_element<caf::atom_value>(i) && m.get_as<caf::atom_value>(i) == Atom::value;
}

/// A serializer only reads what it is given; CAF's `inspect` overloads take mutable references.
template <class T>
T& field(const caf::message& m, size_t i) {
  return const_cast<T&>(m.get_as<T>(i));
}

// Shape ids are part of the link's format: never renumber one, only add.
constexpr uint8_t call_deliver_id = 1;        ///< a grain call to a hub, over a direct route
constexpr uint8_t call_deliver_placed_id = 2; ///< the same, through placement
// 3 is retired: a pure client's lone dispatch, before dispatches travelled in batches.
constexpr uint8_t hand_over_id = 4;      ///< a hand-over to a pure client
constexpr uint8_t envelope_id = 5;       ///< an envelope alone: the answer to each
constexpr uint8_t flag_id = 6;           ///< a bool alone: the answer to a hand-over
constexpr uint8_t dispatch_batch_id = 7; ///< a pure client's dispatches to its gateway

// -- (ct_invoke_atom, grain_id, activation_tag, int32_t, (hg_deliver_atom, envelope,
//     silo_address[, bool])) ------------------------------------------------------------------

template <bool Direct>
bool is_call_deliver(const caf::message& m) {
  if (!(m.match_elements<caf::atom_value, grain_id, activation_tag, int32_t, caf::message>()
        && atom_at<ct_invoke_atom>(m, 0)))
    return false;
  auto& n = m.get_as<caf::message>(4);
  if constexpr (Direct)
    return n.match_elements<caf::atom_value, envelope, silo_address, bool>()
           && atom_at<hg_deliver_atom>(n, 0);
  else
    return n.match_elements<caf::atom_value, envelope, silo_address>()
           && atom_at<hg_deliver_atom>(n, 0);
}

template <bool Direct>
caf::error save_call_deliver(caf::serializer& f, const caf::message& m) {
  auto& n = m.get_as<caf::message>(4);
  if (auto err = f(field<grain_id>(m, 1), field<activation_tag>(m, 2), field<int32_t>(m, 3),
                   field<envelope>(n, 1), field<silo_address>(n, 2)))
    return err;
  if constexpr (Direct)
    return f(field<bool>(n, 3));
  else
    return caf::none;
}

template <bool Direct>
caf::error load_call_deliver(caf::deserializer& f, caf::message& m) {
  grain_id g;
  activation_tag tag;
  int32_t forward_count = 0;
  envelope d;
  silo_address caller;
  if (auto err = f(g, tag, forward_count, d, caller))
    return err;
  caf::message call;
  if constexpr (Direct) {
    bool flag = false;
    if (auto err = f(flag))
      return err;
    call = caf::make_message(hg_deliver_atom::value, std::move(d), std::move(caller), flag);
  } else {
    call = caf::make_message(hg_deliver_atom::value, std::move(d), std::move(caller));
  }
  m = caf::make_message(ct_invoke_atom::value, std::move(g), tag, forward_count, std::move(call));
  return caf::none;
}

// -- (pl_call_atom, grain_id, int32_t, (hg_routes_atom, std::vector<dispatch_item>,
//     silo_address)) ------------------------------------------------------------------------

bool is_dispatch_batch(const caf::message& m) {
  if (!(m.match_elements<caf::atom_value, grain_id, int32_t, caf::message>()
        && atom_at<pl_call_atom>(m, 0)))
    return false;
  auto& n = m.get_as<caf::message>(3);
  return n.match_elements<caf::atom_value, std::vector<dispatch_item>, silo_address>()
         && atom_at<hg_routes_atom>(n, 0);
}

caf::error save_dispatch_batch(caf::serializer& f, const caf::message& m) {
  auto& n = m.get_as<caf::message>(3);
  return f(field<grain_id>(m, 1), field<int32_t>(m, 2), field<std::vector<dispatch_item>>(n, 1),
           field<silo_address>(n, 2));
}

caf::error load_dispatch_batch(caf::deserializer& f, caf::message& m) {
  grain_id g;
  int32_t forward_count = 0;
  std::vector<dispatch_item> items; // grows per item read: a forged count cannot over-allocate
  silo_address client;
  if (auto err = f(g, forward_count, items, client))
    return err;
  m = caf::make_message(pl_call_atom::value, std::move(g), forward_count,
                        caf::make_message(hg_routes_atom::value, std::move(items),
                                          std::move(client)));
  return caf::none;
}

// -- (lr_deliver_atom, envelope), (envelope) and (bool) ----------------------------------------

bool is_hand_over(const caf::message& m) {
  return m.match_elements<caf::atom_value, envelope>() && atom_at<lr_deliver_atom>(m, 0);
}

caf::error save_hand_over(caf::serializer& f, const caf::message& m) {
  return f(field<envelope>(m, 1));
}

/// Reads one `T` and makes it the payload, behind `prefix` (an atom or nothing).
template <class T, class... Prefix>
caf::error load_one(caf::deserializer& f, caf::message& m, Prefix... prefix) {
  T x{};
  if (auto err = f(x))
    return err;
  m = caf::make_message(prefix..., std::move(x));
  return caf::none;
}

caf::error load_hand_over(caf::deserializer& f, caf::message& m) {
  return load_one<envelope>(f, m, lr_deliver_atom::value);
}

/// A payload of one `T` alone: the envelope answering a grain call, the flag answering a
/// hand-over.
template <class T>
bool is_lone(const caf::message& m) {
  return m.match_elements<T>();
}

template <class T>
caf::error save_lone(caf::serializer& f, const caf::message& m) {
  return f(field<T>(m, 0));
}

template <class T>
caf::error load_lone(caf::deserializer& f, caf::message& m) {
  return load_one<T>(f, m);
}

} // namespace

bool register_frame_shapes() {
  bool ok = register_frame_shape(call_deliver_id, {is_call_deliver<true>, save_call_deliver<true>,
                                                   load_call_deliver<true>});
  ok = register_frame_shape(call_deliver_placed_id,
                            {is_call_deliver<false>, save_call_deliver<false>,
                             load_call_deliver<false>})
       && ok;
  ok = register_frame_shape(dispatch_batch_id,
                            {is_dispatch_batch, save_dispatch_batch, load_dispatch_batch})
       && ok;
  ok = register_frame_shape(hand_over_id, {is_hand_over, save_hand_over, load_hand_over}) && ok;
  ok = register_frame_shape(envelope_id,
                            {is_lone<envelope>, save_lone<envelope>, load_lone<envelope>})
       && ok;
  ok = register_frame_shape(flag_id, {is_lone<bool>, save_lone<bool>, load_lone<bool>}) && ok;
  return ok;
}

} // namespace cafmesh::routing
