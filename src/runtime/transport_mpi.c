/* The MPI transport (runtime/transport.h), for jobs launched by mpirun / srun: Open MPI's
 * library, loaded when a client asks for it (ANVIL_COLLECTIVES=mpi), so the plugin does not
 * depend on it otherwise. Built against Open MPI's mpi.h (Debian's libopenmpi-dev): its
 * predefined handles (MPI_COMM_WORLD, MPI_BYTE ...) are symbols of libmpi, found with dlsym.
 *
 * The processes' MPI ranks must be their process indices (what jax.distributed.initialize()
 * reads from Open MPI's environment). Each set of processes gets a communicator of its own
 * (MPI_Comm_create_group, collective over that set only). all_reduce gathers every process's
 * partial result and combines them in process order with the op's own combiner (MPI's
 * predefined operations cover only some of the bodies anvil runs); all_gather is
 * MPI_Allgatherv. MPI has no timeouts: a process that dies ends the job the way mpirun does. */
#include "runtime/transport.h"

#ifdef ANVIL_HAVE_MPI_H
#include <dlfcn.h>
#include <limits.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct mpi_fns {
  int (*Initialized)(int *);
  int (*Finalized)(int *);
  int (*Init_thread)(int *, char ***, int, int *);
  int (*Query_thread)(int *);
  int (*Comm_rank)(MPI_Comm, int *);
  int (*Comm_size)(MPI_Comm, int *);
  int (*Comm_group)(MPI_Comm, MPI_Group *);
  int (*Group_incl)(MPI_Group, int, const int[], MPI_Group *);
  int (*Comm_create_group)(MPI_Comm, MPI_Group, int, MPI_Comm *);
  int (*Group_free)(MPI_Group *);
  int (*Comm_free)(MPI_Comm *);
  int (*Comm_set_errhandler)(MPI_Comm, MPI_Errhandler);
  int (*Allgatherv)(const void *, int, MPI_Datatype, void *, const int[], const int[],
                    MPI_Datatype, MPI_Comm);
  int (*Alltoallv)(const void *, const int[], const int[], MPI_Datatype, void *, const int[],
                   const int[], MPI_Datatype, MPI_Comm);
  int (*Error_string)(int, char *, int *);
  int (*Finalize)(void);
  MPI_Comm world;
  MPI_Datatype byte;
  MPI_Errhandler errors_return;
} mpi_fns;

typedef struct mpi_comm_entry {
  int *procs;
  int n;
  MPI_Comm comm;
  struct mpi_comm_entry *next;
} mpi_comm_entry;

typedef struct mpi_transport {
  av_transport base; /* first */
  void *lib;
  mpi_fns f;
  int me;
  mpi_comm_entry *comms;
} mpi_transport;

/* Open MPI keeps running until MPI_Finalize, which mpirun expects every process to call: the
 * transport that initialised MPI registers it for process exit. Set once, before that
 * registration, and only read afterwards. */
static int (*finalize_at_exit)(void);
static int (*finalized_at_exit)(int *);

static void finalize_mpi(void) {
  int done = 1;
  if (finalized_at_exit && finalized_at_exit(&done) == MPI_SUCCESS && !done) finalize_at_exit();
}

static av_code mpi_failed(mpi_transport *t, av_diag *d, const char *what, int rc) {
  char text[MPI_MAX_ERROR_STRING + 1] = "";
  int len = 0;
  if (t->f.Error_string && t->f.Error_string(rc, text, &len) == MPI_SUCCESS && len >= 0 &&
      len <= MPI_MAX_ERROR_STRING)
    text[len] = '\0';
  return av_diag_set(d, AV_UNAVAILABLE, "MPI %s failed (error %d: %s)", what, rc, text);
}

/* The communicator of a set of processes, made on first use. */
static av_code comm_for(mpi_transport *t, const int *procs, int n, MPI_Comm *out, av_diag *d) {
  for (mpi_comm_entry *e = t->comms; e; e = e->next)
    if (e->n == n && memcmp(e->procs, procs, (size_t)n * sizeof *procs) == 0) {
      *out = e->comm;
      return AV_OK;
    }
  mpi_comm_entry *e = calloc(1, sizeof *e);
  if (e) e->procs = malloc((size_t)n * sizeof *e->procs);
  if (!e || !e->procs) {
    if (e) free(e);
    return av_diag_set(d, AV_RESOURCE_EXHAUSTED, "out of memory");
  }
  memcpy(e->procs, procs, (size_t)n * sizeof *procs);
  e->n = n;
  unsigned tag = 2166136261u; /* the same in every member: from the set */
  for (int i = 0; i < n; i++) tag = (tag ^ (unsigned)procs[i]) * 16777619u;
  MPI_Group world_group, group;
  int rc = t->f.Comm_group(t->f.world, &world_group);
  if (rc == MPI_SUCCESS) {
    rc = t->f.Group_incl(world_group, n, procs, &group);
    t->f.Group_free(&world_group);
  }
  if (rc == MPI_SUCCESS) {
    rc = t->f.Comm_create_group(t->f.world, group, (int)(tag & 0x7fff), &e->comm);
    t->f.Group_free(&group);
  }
  if (rc == MPI_SUCCESS) rc = t->f.Comm_set_errhandler(e->comm, t->f.errors_return);
  if (rc != MPI_SUCCESS) {
    free(e->procs);
    free(e);
    return mpi_failed(t, d, "MPI_Comm_create_group", rc);
  }
  e->next = t->comms;
  t->comms = e;
  *out = e->comm;
  return AV_OK;
}

static av_code mpi_all_gather(av_transport *base, const int *procs, int nprocs, uint32_t tag,
                              const void *in, const size_t *bytes, void *out, av_diag *d) {
  (void)tag; /* every member calls the same operations in the same order */
  mpi_transport *t = (mpi_transport *)base;
  int *counts = calloc((size_t)nprocs, sizeof *counts), *displs = calloc((size_t)nprocs, sizeof *displs);
  av_code c = counts && displs ? AV_OK : av_diag_set(d, AV_RESOURCE_EXHAUSTED, "out of memory");
  size_t at = 0;
  int rank = -1;
  for (int i = 0; c == AV_OK && i < nprocs; i++) {
    if (bytes[i] > INT_MAX || at > INT_MAX)
      c = av_diag_set(d, AV_UNIMPLEMENTED, "MPI all_gather: more than 2 GiB per process");
    counts[i] = (int)bytes[i];
    displs[i] = (int)at;
    at += bytes[i];
    if (procs[i] == t->me) rank = i;
  }
  MPI_Comm comm = t->f.world;
  if (c == AV_OK && rank < 0) c = av_diag_set(d, AV_INTERNAL, "MPI all_gather: not a member");
  if (c == AV_OK) c = comm_for(t, procs, nprocs, &comm, d);
  if (c == AV_OK) {
    int rc = t->f.Allgatherv(in, counts[rank], t->f.byte, out, counts, displs, t->f.byte, comm);
    if (rc != MPI_SUCCESS) c = mpi_failed(t, d, "MPI_Allgatherv", rc);
  }
  free(counts);
  free(displs);
  return c;
}

/* Byte counts and offsets as MPI takes them (int). */
static av_code int_counts(const size_t *bytes, int n, int *counts, int *displs, av_diag *d) {
  size_t at = 0;
  for (int i = 0; i < n; i++) {
    if (bytes[i] > INT_MAX || at > INT_MAX)
      return av_diag_set(d, AV_UNIMPLEMENTED, "MPI exchange: more than 2 GiB per process");
    counts[i] = (int)bytes[i];
    displs[i] = (int)at;
    at += bytes[i];
  }
  return AV_OK;
}

static av_code mpi_all_to_all(av_transport *base, const int *procs, int nprocs, uint32_t tag,
                              const void *in, const size_t *send_bytes, void *out,
                              const size_t *recv_bytes, av_diag *d) {
  (void)tag;
  mpi_transport *t = (mpi_transport *)base;
  int *ints = calloc((size_t)nprocs * 4, sizeof *ints);
  if (!ints) return av_diag_set(d, AV_RESOURCE_EXHAUSTED, "out of memory");
  int *sc = ints, *sd = ints + nprocs, *rc = ints + 2 * nprocs, *rd = ints + 3 * nprocs;
  MPI_Comm comm = t->f.world;
  av_code c = int_counts(send_bytes, nprocs, sc, sd, d);
  if (c == AV_OK) c = int_counts(recv_bytes, nprocs, rc, rd, d);
  if (c == AV_OK) c = comm_for(t, procs, nprocs, &comm, d);
  if (c == AV_OK) {
    int r = t->f.Alltoallv(in, sc, sd, t->f.byte, out, rc, rd, t->f.byte, comm);
    if (r != MPI_SUCCESS) c = mpi_failed(t, d, "MPI_Alltoallv", r);
  }
  free(ints);
  return c;
}

static av_code mpi_all_reduce(av_transport *base, const int *procs, int nprocs, uint32_t tag,
                              const void *in, void *buf, size_t count, size_t elem_size, av_reduce_fn fn,
                              void *fn_ctx, av_diag *d) {
  size_t bytes = count * elem_size;
  char *all = malloc(bytes * (size_t)nprocs + 1);
  size_t *sizes = malloc((size_t)nprocs * sizeof *sizes);
  if (!all || !sizes) {
    free(all);
    free(sizes);
    return av_diag_set(d, AV_RESOURCE_EXHAUSTED, "out of memory");
  }
  for (int i = 0; i < nprocs; i++) sizes[i] = bytes;
  av_code c = mpi_all_gather(base, procs, nprocs, tag, in, sizes, all, d);
  if (c == AV_OK) { /* in process order, the same in every process */
    memcpy(buf, all, bytes);
    for (int i = 1; i < nprocs; i++) fn(fn_ctx, buf, buf, all + (size_t)i * bytes, count);
  }
  free(all);
  free(sizes);
  return c;
}

static void mpi_destroy(av_transport *base) {
  mpi_transport *t = (mpi_transport *)base;
  int done = 1;
  bool live = t->f.Finalized && t->f.Finalized(&done) == MPI_SUCCESS && !done;
  for (mpi_comm_entry *e = t->comms, *n; e; e = n) {
    n = e->next;
    if (live) t->f.Comm_free(&e->comm);
    free(e->procs);
    free(e);
  }
  /* the library stays loaded: MPI is finalised at process exit */
  free(t);
}

static const av_transport_ops mpi_ops = {"mpi", mpi_all_reduce, mpi_all_gather, mpi_all_to_all,
                                         mpi_destroy};

#define MPI_SYM(field, name)                                                          \
  do {                                                                                \
    void *sym_ = dlsym(t->lib, name);                                                 \
    memcpy(&t->f.field, &sym_, sizeof sym_);                                          \
    if (!sym_) missing = name;                                                        \
  } while (0)

bool av_transport_mpi_available(void) { return true; }

av_transport *av_transport_mpi_new(const av_transport_config *cfg, av_diag *d) {
  mpi_transport *t = calloc(1, sizeof *t);
  if (!t) {
    av_diag_set(d, AV_RESOURCE_EXHAUSTED, "out of memory");
    return NULL;
  }
  t->base.ops = &mpi_ops;
  t->me = cfg->process_index;
  /* global: Open MPI's own plugins look up libmpi's symbols */
  t->lib = dlopen("libmpi.so.40", RTLD_NOW | RTLD_GLOBAL);
  if (!t->lib) t->lib = dlopen("libmpi.so", RTLD_NOW | RTLD_GLOBAL);
  if (!t->lib) {
    av_diag_set(d, AV_UNAVAILABLE, "MPI: cannot load Open MPI's libmpi (%s)", dlerror());
    free(t);
    return NULL;
  }
  const char *missing = NULL;
  MPI_SYM(Initialized, "MPI_Initialized");
  MPI_SYM(Finalized, "MPI_Finalized");
  MPI_SYM(Init_thread, "MPI_Init_thread");
  MPI_SYM(Query_thread, "MPI_Query_thread");
  MPI_SYM(Comm_rank, "MPI_Comm_rank");
  MPI_SYM(Comm_size, "MPI_Comm_size");
  MPI_SYM(Comm_group, "MPI_Comm_group");
  MPI_SYM(Group_incl, "MPI_Group_incl");
  MPI_SYM(Comm_create_group, "MPI_Comm_create_group");
  MPI_SYM(Group_free, "MPI_Group_free");
  MPI_SYM(Comm_free, "MPI_Comm_free");
  MPI_SYM(Comm_set_errhandler, "MPI_Comm_set_errhandler");
  MPI_SYM(Allgatherv, "MPI_Allgatherv");
  MPI_SYM(Alltoallv, "MPI_Alltoallv");
  MPI_SYM(Error_string, "MPI_Error_string");
  MPI_SYM(Finalize, "MPI_Finalize");
  void *world = dlsym(t->lib, "ompi_mpi_comm_world"), *byte = dlsym(t->lib, "ompi_mpi_byte");
  void *errs = dlsym(t->lib, "ompi_mpi_errors_return");
  if (missing || !world || !byte || !errs) {
    av_diag_set(d, AV_UNAVAILABLE, "MPI: the loaded libmpi is not Open MPI's (no %s)",
                missing ? missing : "ompi_mpi_comm_world");
    free(t);
    return NULL;
  }
  t->f.world = (MPI_Comm)world;
  t->f.byte = (MPI_Datatype)byte;
  t->f.errors_return = (MPI_Errhandler)errs;
  int inited = 0, level = 0, rank = -1, size = 0;
  t->f.Initialized(&inited);
  if (!inited) {
    /* operations come from several threads, one at a time (runtime/net.c serialises them) */
    if (t->f.Init_thread(NULL, NULL, MPI_THREAD_SERIALIZED, &level) != MPI_SUCCESS) {
      av_diag_set(d, AV_UNAVAILABLE, "MPI_Init_thread failed (is this process started by mpirun?)");
      free(t);
      return NULL;
    }
    if (!finalize_at_exit) {
      finalize_at_exit = t->f.Finalize;
      finalized_at_exit = t->f.Finalized;
      atexit(finalize_mpi);
    }
  } else {
    t->f.Query_thread(&level);
  }
  t->f.Comm_rank(t->f.world, &rank);
  t->f.Comm_size(t->f.world, &size);
  if (level < MPI_THREAD_SERIALIZED || rank != cfg->process_index || size != cfg->num_processes) {
    av_diag_set(d, AV_FAILED_PRECONDITION,
                "MPI: this is MPI rank %d of %d (thread level %d), but process %d of %d of the "
                "job: start every process with mpirun/srun and let jax.distributed.initialize() "
                "take the ranks from MPI's environment",
                rank, size, level, cfg->process_index, cfg->num_processes);
    free(t);
    return NULL;
  }
  t->f.Comm_set_errhandler(t->f.world, t->f.errors_return);
  return &t->base;
}

#else

bool av_transport_mpi_available(void) { return false; }

av_transport *av_transport_mpi_new(const av_transport_config *cfg, av_diag *d) {
  (void)cfg;
  av_diag_set(d, AV_UNIMPLEMENTED,
              "collectives 'mpi' need Open MPI's headers at build time: this anvil was built "
              "without them (install libopenmpi-dev and rebuild)");
  return NULL;
}

#endif
