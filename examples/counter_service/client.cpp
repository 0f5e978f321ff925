// counter-service-client: for DURATION_MS sends requests to `node/counter/{i % K}` through a
// pure client over CAF io, W in flight at a time, each sent again while its failure is
// resendable; then waits for the last answers and prints `sent S answered A nacked F
// unanswered U`. Exit 0 only when every request was answered. Each failed request is written
// to stderr as `request failed: key K sent_ms T0 ended_ms T1: {error}` (wall-clock ms).
//   cafmesh-counter-client CONFIG.json DURATION_MS K W TIMEOUT_MS
#include <chrono>
#include <functional>
#include <future>
#include <iostream>
#include <memory>
#include <string>

#include "counter.hpp"

namespace {

struct tally {
  int sent = 0, ended = 0, answered = 0, nacked = 0, unanswered = 0;
};

int64_t wall_ms() {
  auto now = std::chrono::system_clock::now().time_since_epoch();
  return std::chrono::duration_cast<std::chrono::milliseconds>(now).count();
}

} // namespace

int main(int argc, char** argv) {
  if (argc != 6) {
    std::cerr << "usage: cafmesh-counter-client CONFIG.json DURATION_MS K W TIMEOUT_MS\n";
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
    std::cerr << "cafmesh-counter-client: client not built: "
              << cafmesh::to_fault(client.error()).render() << "\n";
    return 1;
  }
  if (auto err = client->when_active()) {
    // The join bound (membership.max_join_time_ms) names the address it tried.
    std::cerr << ("cafmesh-counter-client: client not started: " + cafmesh::to_fault(err).render()
                  + "\n"); // one write: the log's threads write to stderr too
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
      auto key = t->sent++ % keys;
      auto target = address::from("node/counter/" + std::to_string(key));
      auto sent_ms = wall_ms();
      request(self, entry, target, "{}", timeout, request_options{true})
        .then(
          [=](const std::string&) {
            ++t->answered;
            ended();
          },
          [=](caf::error& err) {
            auto e = delivery_error_of(err, self->system().render(err));
            ++(e.deadline ? t->unanswered : t->nacked);
            // One write: a log line from another thread never cuts it.
            std::cerr << ("request failed: key " + std::to_string(key) + " sent_ms "
                          + std::to_string(sent_ms) + " ended_ms " + std::to_string(wall_ms())
                          + ": " + to_string(e) + "\n");
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
