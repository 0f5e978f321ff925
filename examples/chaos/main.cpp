// cafmesh-chaos: the seeded chaos runner's command line (cafmesh/mainjob/chaos.hpp
// `chaos_main`) with the echo application, e.g. `cafmesh-chaos --seeds 200`,
// `cafmesh-chaos --seed 17 --shrink`.

#include "cafmesh/mainjob/chaos.hpp"

int main(int argc, char** argv) {
  return cafmesh::mainjob::chaos_main(argc, argv);
}
