# Sourced by the tests of NVIDIA's Llama-3 8B FP8 example
# (NVIDIA/Megatron-LM examples/llama/train_llama3_8b_h100_fp8.sh at
# f7ec7ea8d6ab25f9395616d359d4bff37d157342), with $tmp set: the script's
# argument groups, scaled in shape only (2 layers of hidden 64, 4 heads in 2
# query groups of 16, FFN 224, seq 32, micro-batch 1 of a global batch of
# 2), in its order; --num-threads 2 added (this machine). Its
# --train-samples, --lr-decay-samples and --lr-warmup-samples are
# example_training's arguments (the script's are a full run's).
#   example_model_training TRAIN DECAY WARMUP   MODEL_ARGS and TRAINING_ARGS (with its DDP_ARGS)
#   example_dtype_args                          DTYPE_ARGS of its DTYPE="fp8" branch
#   example_parallel_args                       MODEL_PARALLEL_ARGS (TP 1, CP 1)
#   mock_data, real_data                        DATA_ARGS_LIST, the two branches
#   example_logging CHECKPOINT_PATH TB_PATH     EVAL_AND_LOGGING_ARGS
#   make_example_data                           the real branch's dataset ($tmp/llama3_text_document)
# shellcheck shell=bash
example_tokenizer=$(cd "$(dirname "${BASH_SOURCE[0]}")/../data/tokenizers/llama3_style" && pwd)  # a Llama-3-style tokenizer.json

example_model_training() {
  echo --use-mcore-models --num-layers 2 --hidden-size 64 --ffn-hidden-size 224 --num-attention-heads 4 \
    --group-query-attention --num-query-groups 2 --kv-channels 16 --seq-length 32 --max-position-embeddings 32 \
    --position-embedding-type rope --rotary-base 1000000 --rotary-percent 1.0 --attention-dropout 0.0 \
    --hidden-dropout 0.0 --swiglu --init-method-std 0.0134 --attention-backend fused \
    --apply-layernorm-1p --untie-embeddings-and-output-weights --disable-bias-linear --micro-batch-size 1 \
    --global-batch-size 2 --train-samples "$1" --lr-decay-samples "$2" --lr-warmup-samples "$3" --lr 0.00015 \
    --min-lr 0.00001 --decoupled-lr 5.0e-4 --decoupled-min-lr 4.5e-5 --lr-decay-style cosine --clip-grad 1.0 \
    --weight-decay 0.1 --adam-beta1 0.9 --adam-beta2 0.95 --bf16 --grad-reduce-in-bf16 --cross-entropy-loss-fusion \
    --calculate-per-token-loss --manual-gc --empty-unused-memory-level 1 --exit-duration-in-mins 235 \
    --use-distributed-optimizer --overlap-grad-reduce --overlap-param-gather
}
example_dtype_args() { echo --fp8-format hybrid --fp8-amax-history-len 1024 --fp8-amax-compute-algo max --fp8-param-gather; }
example_parallel_args() { echo --tensor-model-parallel-size 1 --context-parallel-size 1 --sequence-parallel; }
# The script's "--split '99,1,0'" keeps its quotes through its word splitting.
mock_data=(--mock-data --tokenizer-type NullTokenizer --vocab-size 128256 --data-cache-path "$tmp/dcache"
  --tiktoken-pattern v2 --split "'99,1,0'" --no-create-attention-mask-in-dataloader --no-mmap-bin-files --num-workers 1)
real_data=(--data-path "$tmp/llama3_text_document" --tokenizer-type HuggingFaceTokenizer
  --tokenizer-model "$example_tokenizer" --data-cache-path "$tmp/dcache" --split "'99,1,0'"
  --no-create-attention-mask-in-dataloader --no-mmap-bin-files --num-workers 1 --vocab-size 128256)
example_logging() {
  echo --log-interval 1 --eval-iters 1 --eval-interval 1000 --save-interval 1000 --log-throughput --profile \
    --profile-step-start 4 --profile-step-end 6 --ckpt-format torch_dist --distributed-timeout-minutes 60 \
    --save "$1" --load "$1" --tensorboard-dir "$2" --num-threads 2
}
# The real-data branch's dataset: kiln's docs, one document a paragraph,
# made by kiln preprocess with the Hugging Face tokenizer ($kiln set).
make_example_data() {
  python3 "$(dirname "${BASH_SOURCE[0]}")/docs_jsonl.py" >"$tmp/docs.jsonl"
  "$kiln" preprocess --input "$tmp/docs.jsonl" --output-prefix "$tmp/llama3" --tokenizer-type HuggingFaceTokenizer \
    --tokenizer-model "$example_tokenizer" --append-eod --workers 1 >/dev/null 2>&1
}
