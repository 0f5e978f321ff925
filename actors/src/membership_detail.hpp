#pragma once

/// @file
/// Pieces the membership actors share (membership.cpp: the development oracle and the agent;
/// membership_table_oracle.cpp: the table oracle). Private to the actors library.

#include <algorithm>
#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include <caf/actor.hpp>
#include <caf/actor_cast.hpp>
#include <caf/send.hpp>
#include <caf/system_messages.hpp>
#include <caf/error.hpp>

#include "cafmesh/actors/detail/tell.hpp"
#include "cafmesh/actors/fault.hpp"
#include "cafmesh/actors/ids.hpp"

namespace cafmesh::membership_detail {

/// A refusal of the membership protocol, as the CAF error carrying its fault.
inline caf::error refused(mesh_errc code, std::string text) {
  return to_error(fault{code, std::move(text)});
}

using cafmesh::detail::tell;

/// Forgets the subscriber a down message is about.
inline void forget(std::vector<caf::actor>& subscribers, const caf::down_msg& dm) {
  subscribers.erase(std::remove_if(subscribers.begin(), subscribers.end(),
                                   [&](const caf::actor& a) { return a.address() == dm.source; }),
                    subscribers.end());
}

/// Which silos are silent (or suspected) now, and since which report: a silence that starts
/// gets an epoch, and a check scheduled with it still holds only if no report came since.
class silence_tracker {
public:
  /// Records a report; answers the epoch to check after the detection delay when a silence
  /// starts, 0 otherwise (a silo already silent keeps its start time; a sign of life ends
  /// the silence).
  uint64_t report(const silo_address& s, bool alive) {
    if (alive) {
      if (silent_.erase(s) > 0)
        ++epoch_[s];
      return 0;
    }
    if (!silent_.insert(s).second)
      return 0;
    return ++epoch_[s];
  }

  /// True if the silence that started with epoch `e` still lasts.
  bool lasts(const silo_address& s, uint64_t e) const {
    auto i = epoch_.find(s);
    return i != epoch_.end() && i->second == e && silent_.count(s) > 0;
  }

private:
  std::set<silo_address> silent_;
  std::map<silo_address, uint64_t> epoch_;
};

} // namespace cafmesh::membership_detail
