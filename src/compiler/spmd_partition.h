/* SPMD partitioning: rewrites main of a propagated multi-device module (spmd_propagate.h)
 * into the program every device runs on its own shards.
 *
 * Each value gets its local shape (global dims divided by its sharding); an op whose factors
 * (spmd_rules.h) allow it runs on local shards as it is, after its operands are resharded to
 * what it needs: all_gather where a dimension must be whole, a slice at the device's offset
 * (partition_id indexes a table of offsets) where it must be split, all_reduce /
 * reduce_scatter where partial sums are left by a sharded contraction or reduction. An op
 * without a rule gathers its operands and runs on whole values (listed as a fallback).
 * sdy.manual_computation bodies are inlined: they already are per-device code, with their
 * collectives. main's arguments and results take the shapes of their shards.
 *
 * Collectives use flattened device ids (channel ids with use_global_device_ids), so the
 * program runs on num_partitions devices of one replica, each with its partition id. */
#ifndef ANVIL_COMPILER_SPMD_PARTITION_H
#define ANVIL_COMPILER_SPMD_PARTITION_H

#include <stdbool.h>

#include "compiler/spmd_propagate.h"
#include "ir/ir.h"
#include "util/diag.h"

/* What partitioning did, for anvil-check and tests. */
typedef struct av_spmd_report {
  bool partitioned;      /* main now works on local shards */
  char *why_not;         /* malloc'd reason when not partitioned (global program kept) */
  int nfallbacks;        /* ops run on whole (gathered) operands */
  char **fallbacks;      /* malloc'd "op at loc: reason" */
  int ncollectives;      /* collectives inserted */
  int ncustom;           /* calls partitioned by their custom partitioner (spmd_custom.c) */
} av_spmd_report;

void av_spmd_report_free(av_spmd_report *r);

/* Partitions main in place when it can: one replica, `num_partitions` devices, shardings on a
 * mesh of that many devices (a program with no sharded value is left alone). A program it
 * cannot partition is left unchanged with report->why_not set (it then runs as one global
 * program). Errors only for malformed input or when out of memory. */
av_code av_spmd_partition(av_module *m, const av_spmd_shardings *s, int num_replicas,
                          int num_partitions, av_spmd_report *report, av_diag *d);

#endif
