# The pod sandbox image named in containerd's config: one static binary, no base.
# shellcheck shell=bash
image=pause
suite=
packages=
image_config='{"Entrypoint":["/pause"],"User":"65535:65535"}'
customize() {
  mkdir -p "$1/dev" "$1/proc" "$1/sys"
  gcc -O2 -static -o "$1/pause" "$images_dir/src/pause.c"
}
