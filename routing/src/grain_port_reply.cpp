#include "cafmesh/routing/router_ports.hpp"

#include <utility>

#include <caf/local_actor.hpp>
#include <caf/mailbox_element.hpp>
#include <caf/message_id.hpp>

namespace cafmesh::routing {

grain_port_reply::grain_port_reply(caf::local_actor* port, uint64_t call)
  : port_(port), call_(call) {
  if (auto* e = port->current_mailbox_element()) {
    caller_ = e->sender;
    urgent_ = e->mid.is_urgent_message();
  }
}

template <class T>
void grain_port_reply::send(T&& x) const {
  if (!caller_ || port_ == nullptr)
    return;
  auto prio = urgent_ ? caf::message_priority::high : caf::message_priority::normal;
  // As `self->send` does: the port is the sender, its execution context schedules the caller.
  caller_->enqueue(caf::make_mailbox_element(caf::strong_actor_ptr{port_->ctrl()},
                                             caf::make_message_id(prio), {}, gp_result_atom::value,
                                             call_, std::forward<T>(x)),
                   port_->context());
}

void grain_port_reply::deliver(envelope result) const {
  send(std::move(result));
}

void grain_port_reply::deliver(caf::error failure) const {
  send(std::move(failure));
}

} // namespace cafmesh::routing
