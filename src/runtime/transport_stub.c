/* Builds without gloo (libgloo-dev not found at configure time): multi-process clients are
 * refused with this message; everything else works. */
#include "runtime/transport.h"

#ifndef ANVIL_HAVE_GLOO
bool av_transport_gloo_available(void) { return false; }

av_transport *av_transport_gloo_new(const av_kv_store *kv, const av_transport_config *cfg,
                                    av_diag *d) {
  (void)kv;
  (void)cfg;
  av_diag_set(d, AV_UNIMPLEMENTED,
              "cross-process collectives need gloo: this anvil was built without it (install "
              "libgloo-dev and rebuild)");
  return NULL;
}
#endif
