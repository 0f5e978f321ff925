// orders-client: for DURATION_MS places order lines `{"sku":"s{i % 7}","qty":1}` on
// `node/orders/o{i % K}` through a pure client over CAF io, W in flight at a time, each sent
// again while its failure is resendable; then waits for the last answers and prints `sent S
// answered A nacked F unanswered U`. Exit 0 only when every request was answered.
//   cafmesh-orders-client CONFIG.json DURATION_MS K W TIMEOUT_MS
#include <chrono>
#include <functional>
#include <future>
#include <iostream>
#include <memory>
#include <string>

#include "orders.hpp"

namespace {

struct tally {
  int sent = 0, ended = 0, answered = 0, nacked = 0, unanswered = 0;
};

} // namespace

int main(int argc, char** argv) {
  if (argc != 6) {
    std::cerr << "usage: cafmesh-orders-client CONFIG.json DURATION_MS K W TIMEOUT_MS\n";
    return 2;
  }
  auto duration = std::chrono::milliseconds(std::stoi(argv[2]));
  int keys = std::stoi(argv[3]), window = std::stoi(argv[4]);
  auto timeout = std::chrono::milliseconds(std::stoi(argv[5]));
  caf::actor_system_config cfg;
  cafmesh::lifecycle::prepare(cfg);
  caf::actor_system sys{cfg};
  auto client = cafmesh::lifecycle::client_builder{sys}.config_file(argv[1]).network().build();
  if (!client) {
    std::cerr << "cafmesh-orders-client: client not built: "
              << cafmesh::to_fault(client.error()).render() << "\n";
    return 1;
  }
  if (auto err = client->when_active()) {
    // E.g. the join bound (membership.max_join_time_ms), naming the address it tried.
    std::cerr << "cafmesh-orders-client: client not started: " << cafmesh::to_fault(err).render()
              << "\n";
    client->stop(false);
    return 1;
  }
  auto result = std::make_shared<std::promise<tally>>();
  auto entry = client->entry();
  sys.spawn([=](caf::event_based_actor* self) {
    using namespace cafmesh::routing;
    auto t = std::make_shared<tally>();
    auto next = std::make_shared<std::function<void()>>();
    auto until = std::chrono::steady_clock::now() + duration;
    auto ended = [=] {
      ++t->ended;
      if (std::chrono::steady_clock::now() < until) {
        (*next)();
      } else if (t->ended == t->sent) {
        result->set_value(*t);
        // `next` holds the lambda that holds `next`: release it, or the cycle keeps this
        // actor and the entry it calls alive past the actor system (LeakSanitizer says so).
        *next = nullptr;
        self->quit();
      }
    };
    *next = [=] {
      auto i = t->sent++;
      auto target = address::from("node/orders/o" + std::to_string(i % keys));
      auto line = "{\"sku\":\"s" + std::to_string(i % 7) + "\",\"qty\":1}";
      request(self, entry, target, line, timeout, request_options{true})
        .then(
          [=](const std::string&) {
            ++t->answered;
            ended();
          },
          [=](caf::error& err) {
            auto e = delivery_error_of(err, self->system().render(err));
            ++(e.deadline ? t->unanswered : t->nacked);
            std::cerr << "request failed: " << to_string(e) << "\n";
            ended();
          });
    };
    for (int i = 0; i < window; ++i)
      (*next)();
  });
  auto t = result->get_future().get();
  std::cout << "sent " << t.sent << " answered " << t.answered << " nacked " << t.nacked
            << " unanswered " << t.unanswered << std::endl;
  client->stop();
  return t.sent > 0 && t.answered == t.sent ? 0 : 1;
}
