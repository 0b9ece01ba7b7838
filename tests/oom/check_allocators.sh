#!/bin/sh
# The allocation-failure test (test_oom) wraps malloc, calloc, realloc, aligned_alloc,
# posix_memalign, strdup, strndup and free at link time (tests/oom/oom_wrap.c). An allocator
# outside that list would escape it: fail if anvil's C sources call one.
src=${1:?usage: check_allocators.sh SOURCE_DIR}/src
found=$(grep -rnE '\b(memalign|valloc|pvalloc|reallocarray|asprintf|vasprintf|open_memstream|getline|getdelim|realpath|scandir|wcsdup|strdupa)\s*\(' "$src" --include='*.c' --include='*.h')
if [ -n "$found" ]; then
  echo "allocators test_oom does not wrap (add them to tests/oom/oom_wrap.c and CMakeLists.txt):"
  echo "$found"
  exit 1
fi
echo "check_allocators: anvil calls only the wrapped allocators"
