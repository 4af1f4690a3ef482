#!/bin/sh
# deep_seeds.sh DIR [PREFIX]: writes two 1 MiB seeds of well-formed nesting
# into the scratch corpus DIR, [[[...]]] and {"a":{"a":...1}}, each after
# PREFIX (the admin target's path byte). Made at run time so that the
# repository keeps no megabyte files.
set -e
dir=$1
prefix=${2-}
{
    printf '%s' "$prefix"
    head -c 524288 /dev/zero | tr '\0' '['
    head -c 524288 /dev/zero | tr '\0' ']'
} > "$dir/deep-array"
{
    printf '%s' "$prefix"
    yes '{"a":' | head -n 174762 | tr -d '\n'
    printf 1
    head -c 174762 /dev/zero | tr '\0' '}'
} > "$dir/deep-object"
