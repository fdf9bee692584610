# Sourced by the bench/gpu_*.sh scripts (repo root, CORPUS and RES set): a private copy of the corpus in $LIGER, this
# checkout's server on PYTHONPATH, a fresh artefact cache, `step`, and what machine this is.
mkdir -p "$RES"
WORK=$(mktemp -d); cp -r "$CORPUS/liger-kernel" "$WORK/"; LIGER="$WORK/liger-kernel"
export PYTHONPATH="$PWD/server${PYTHONPATH:+:$PYTHONPATH}" PYTHONUNBUFFERED=1 TRITONLENS_CACHE_DIR="$WORK/cache"
REPO=$PWD
step() { echo; echo "=== $*"; }
step machine; nvidia-smi --query-gpu=name,compute_cap,driver_version --format=csv,noheader; nproc
python -c "import triton, torch; print('triton', triton.__version__, 'torch', torch.__version__)"
