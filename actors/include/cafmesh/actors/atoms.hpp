#pragma once

/// @file
/// Message tags of the actors folder (CAF 0.17 atoms, at most 10 characters). Every atom
/// carries the prefix of its component so it never clashes with CAF's predefined atoms or
/// with another folder's: `mc` message centre, `sim` simulated network, `mb` membership,
/// `dir` grain directory.

#include <caf/atom.hpp>

namespace cafmesh {

// -- message centre (message_center.hpp) -----------------------------------------
using mc_register_atom = caf::atom_constant<caf::atom("mcreg")>;
using mc_unregister_atom = caf::atom_constant<caf::atom("mcunreg")>;
using mc_call_atom = caf::atom_constant<caf::atom("mccall")>;
using mc_send_atom = caf::atom_constant<caf::atom("mcsend")>;
using mc_frame_atom = caf::atom_constant<caf::atom("mcframe")>;
/// `(mc_frames_atom, std::vector<wire_frame>)`: several frames from a link, in link order
/// (SPEC §14 B7, message_center.hpp).
using mc_frames_atom = caf::atom_constant<caf::atom("mcframes")>;
/// The message centre's own "hand the frames of this backlog to the link" (message_center.cpp).
using mc_flush_atom = caf::atom_constant<caf::atom("mcflush")>;
using mc_bounce_atom = caf::atom_constant<caf::atom("mcbounce")>;
using mc_gone_atom = caf::atom_constant<caf::atom("mcgone")>;
using mc_block_atom = caf::atom_constant<caf::atom("mcblock")>;
using mc_whoami_atom = caf::atom_constant<caf::atom("mcwhoami")>;
using mc_stats_atom = caf::atom_constant<caf::atom("mcstats")>;
using mc_never_atom = caf::atom_constant<caf::atom("mcnever")>;
using mc_watch_atom = caf::atom_constant<caf::atom("mcwatch")>;

// -- simulated network (sim_network.hpp) -----------------------------------------
using sim_attach_atom = caf::atom_constant<caf::atom("simattach")>;
using sim_frame_atom = caf::atom_constant<caf::atom("simframe")>;
/// `(sim_frames_atom, std::vector<wire_frame>)`: several frames to send, in order (SPEC §14
/// B7, message_center.hpp).
using sim_frames_atom = caf::atom_constant<caf::atom("simframes")>;
using sim_pump_atom = caf::atom_constant<caf::atom("simpump")>;
using sim_stall_atom = caf::atom_constant<caf::atom("simstall")>;
using sim_unstall_atom = caf::atom_constant<caf::atom("simunstall")>;
using sim_partition_atom = caf::atom_constant<caf::atom("simpart")>;
using sim_heal_atom = caf::atom_constant<caf::atom("simheal")>;
using sim_drop_atom = caf::atom_constant<caf::atom("simdrop")>;
using sim_delay_atom = caf::atom_constant<caf::atom("simdelay")>;
using sim_kill_atom = caf::atom_constant<caf::atom("simkill")>;
using sim_trace_atom = caf::atom_constant<caf::atom("simtrace")>;
using sim_digest_atom = caf::atom_constant<caf::atom("simdigest")>;
using sim_note_atom = caf::atom_constant<caf::atom("simnote")>;
using sim_watch_atom = caf::atom_constant<caf::atom("simwatch")>;
/// `(sim_flush_atom, silo_address src, silo_address dst) -> (ok, bool frames_lost)`:
/// answered once the frames already on the wire from `src` to `dst` have been delivered;
/// `frames_lost` says the link dropped one of them (sim_network.hpp).
using sim_flush_atom = caf::atom_constant<caf::atom("simflush")>;

// -- membership (membership.hpp) -------------------------------------------------
using mb_join_atom = caf::atom_constant<caf::atom("mbjoin")>;
using mb_status_atom = caf::atom_constant<caf::atom("mbstatus")>;
using mb_dead_atom = caf::atom_constant<caf::atom("mbdead")>;
using mb_subscribe_atom = caf::atom_constant<caf::atom("mbsub")>;
using mb_snapshot_atom = caf::atom_constant<caf::atom("mbsnap")>;
using mb_get_atom = caf::atom_constant<caf::atom("mbget")>;
using mb_check_atom = caf::atom_constant<caf::atom("mbcheck")>;
/// `(mb_carry_atom, uint64_t epoch)`: a membership agent's bound on carrying the rows of a
/// reset table's predecessor passed (membership.hpp).
using mb_carry_atom = caf::atom_constant<caf::atom("mbcarry")>;
/// `(mb_rejoin_atom)`: a membership agent tries again to register its row in a reset table
/// (membership.hpp).
using mb_rejoin_atom = caf::atom_constant<caf::atom("mbrejoin")>;
/// `(mb_reach_atom) -> uint64_t` to a membership agent: answered once its oracle answered a
/// read of the membership table, within the agent's join bound (membership.hpp).
using mb_reach_atom = caf::atom_constant<caf::atom("mbreach")>;
/// `(mb_retry_atom, uint64_t attempt)`: a membership agent tries again to reach its table
/// for a bounded join or reach (membership.hpp).
using mb_retry_atom = caf::atom_constant<caf::atom("mbretry")>;
/// `(mb_declared_atom, caf::actor watcher)` to a membership agent: `watcher` receives
/// `(mb_declared_atom, uint64_t version)` once a view shows this process's silo departed
/// although it never published a leaving status itself (membership.hpp).
using mb_declared_atom = caf::atom_constant<caf::atom("mbdeclared")>;

// -- grain directory (directory.hpp) ---------------------------------------------
using dir_lookup_atom = caf::atom_constant<caf::atom("dirlookup")>;
using dir_register_atom = caf::atom_constant<caf::atom("dirreg")>;
using dir_unregister_atom = caf::atom_constant<caf::atom("dirunreg")>;
using dir_unreg_silo_atom = caf::atom_constant<caf::atom("dirunsilo")>;
using dir_handoff_atom = caf::atom_constant<caf::atom("dirhandoff")>;
using dir_lost_atom = caf::atom_constant<caf::atom("dirlost")>;
using dir_entries_atom = caf::atom_constant<caf::atom("direntries")>;
using dir_invalidate_atom = caf::atom_constant<caf::atom("dirinval")>;
using dir_get_atom = caf::atom_constant<caf::atom("dirget")>;
using dir_put_atom = caf::atom_constant<caf::atom("dirput")>;

} // namespace cafmesh
