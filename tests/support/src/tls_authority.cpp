#include "cafmesh/testing/tls_authority.hpp"

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <stdexcept>
#include <vector>

#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <nlohmann/json.hpp>

extern char** environ;

namespace cafmesh::testing {

namespace {

/// Runs `openssl args...` in `dir` with its output in `dir`/openssl.log; throws with that
/// output if it fails.
void openssl(const std::string& dir, std::vector<std::string> args) {
  args.insert(args.begin(), "openssl");
  std::vector<char*> argv;
  for (auto& a : args)
    argv.push_back(a.data());
  argv.push_back(nullptr);
  auto log = dir + "/openssl.log";
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, STDIN_FILENO, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_addopen(&fa, STDOUT_FILENO, log.c_str(),
                                   O_WRONLY | O_CREAT | O_TRUNC, 0600);
  posix_spawn_file_actions_adddup2(&fa, STDOUT_FILENO, STDERR_FILENO);
  posix_spawn_file_actions_addchdir_np(&fa, dir.c_str());
  pid_t pid = -1;
  auto err = posix_spawnp(&pid, "openssl", &fa, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&fa);
  if (err != 0)
    throw std::runtime_error("cannot run openssl (Debian's openssl package): "
                             + std::string{std::strerror(err)});
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    // again
  }
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    std::ifstream in{log};
    std::string out{std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
    std::string cmd;
    for (auto& a : args)
      cmd += (cmd.empty() ? "" : " ") + a;
    throw std::runtime_error(cmd + " failed: " + out);
  }
}

/// `openssl req` arguments making a new EC P-256 key `key` without a passphrase.
std::vector<std::string> new_key(const std::string& key) {
  return {"-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-keyout", key};
}

} // namespace

std::string tls_files::network_members() const {
  using nlohmann::json;
  return ", \"tls_certificate_file\": " + json(certificate_file).dump()
         + ", \"tls_key_file\": " + json(key_file).dump()
         + ", \"tls_ca_file\": " + json(ca_file).dump();
}

tls_authority::tls_authority(const std::string& name) {
  char tmpl[] = "/tmp/cafmesh-tls-XXXXXX";
  if (::mkdtemp(tmpl) == nullptr)
    throw std::runtime_error(std::string{"mkdtemp: "} + std::strerror(errno));
  dir_ = tmpl;
  auto args = new_key("ca.key");
  args.insert(args.begin(), {"req", "-x509", "-new"});
  args.insert(args.end(), {"-out", "ca.crt", "-days", "2", "-subj", "/CN=" + name});
  openssl(dir_, args);
  std::ofstream ext{dir_ + "/leaf.ext"};
  ext << "basicConstraints = critical, CA:FALSE\n"
         "keyUsage = critical, digitalSignature\n"
         "extendedKeyUsage = serverAuth, clientAuth\n";
}

tls_authority::~tls_authority() {
  std::error_code ec;
  std::filesystem::remove_all(dir_, ec);
}

tls_files tls_authority::issue(const std::string& name) {
  auto args = new_key(name + ".key");
  args.insert(args.begin(), {"req", "-new"});
  args.insert(args.end(), {"-out", name + ".csr", "-subj", "/CN=" + name});
  openssl(dir_, args);
  openssl(dir_, {"x509", "-req", "-in", name + ".csr", "-CA", "ca.crt", "-CAkey", "ca.key",
                 "-CAcreateserial", "-days", "2", "-extfile", "leaf.ext", "-out",
                 name + ".crt"});
  return {dir_ + "/" + name + ".crt", dir_ + "/" + name + ".key", ca_file()};
}

} // namespace cafmesh::testing
