/* The plugin's own translation unit is empty: libanvil_pjrt.so is the whole static core
 * (linked with --whole-archive) behind a version script that exports only GetPjrtApi. */
typedef int anvil_shared_lib_anchor;
