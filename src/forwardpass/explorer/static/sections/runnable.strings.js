// §07 The runnable loop. Every word of the section, [English, Chinese].

export default {
  "title-s07": ["7. The runnable loop", "7. 可运行的循环"],
  "intro-s07": ["Everything above fits in a loop of a few lines.", "上面的一切都装得进几行代码的循环。"],

  // W-loop-walk
  "title-W-loop-walk": ["Line by line", "逐行查看"],
  "before-W-loop-walk": ["Step through the loop; each line links to the section that put a number on it.",
    "逐行查看这个循环；每一行都链接到给出其数字的那一节。"],
  "after-W-loop-walk": ["Every line is one of the stages or choices above.", "每一行都对应上面的某个阶段或选择。"],
  "W-loop-walk.prev": ["previous line", "上一行"],
  "W-loop-walk.next": ["next line", "下一行"],
  "W-loop-walk.readout": ["{line} — numbers in ", "{line}——数字见 "],
  // the section each line of the loop links to, by the line's index (compute.LOOP)
  "W-loop-walk.where.0": ["§05 the KV cache", "§05 KV 缓存"],
  "W-loop-walk.where.1": ["§04 the loop", "§04 循环"],
  "W-loop-walk.where.2": ["§04 naive vs cached", "§04 朴素与缓存"],
  "W-loop-walk.where.3": ["§00 the pipeline, §06 what it costs", "§00 流水线，§06 代价"],
  "W-loop-walk.where.4": ["§03 temperature", "§03 温度"],
  "W-loop-walk.where.5": ["§03 top-k, top-p", "§03 top-k 与 top-p"],
  "W-loop-walk.where.6": ["§04 the loop", "§04 循环"],
  "W-loop-walk.where.7": ["§04 stop conditions", "§04 停止条件"],

  // W-loop-cost
  "title-W-loop-cost": ["What each line costs here", "每一行在这里的代价"],
  "before-W-loop-cost": ["The same lines with their cost on this model, for your prompt.", "同样这几行，在这个模型上、针对你的提示词的代价。"],
  "after-W-loop-cost": [
    "The first call pays for the whole prompt; every later call pays for one token and a cache that keeps growing.",
    "第一次调用为整个提示词付费；之后每次调用只为一个词元和不断增长的缓存付费。",
  ],
  "W-loop-cost.new": ["Generated tokens", "生成的词元数"],
  "W-loop-cost.caption": ["Cost per line", "每一行的代价"],
  "W-loop-cost.col.line": ["line", "代码行"],
  "W-loop-cost.col.what": ["what", "内容"],
  "W-loop-cost.col.cost": ["cost", "代价"],
  "W-loop-cost.what.prefill": ["prefill (first call)", "预填充（第一次调用）"],
  "W-loop-cost.what.per_token": ["each later call (one token)", "之后每次调用（一个词元）"],
  "W-loop-cost.what.cache": ["KV cache after the loop (fp32)", "循环结束后的 KV 缓存（fp32）"],
  "W-loop-cost.what.softmax": ["softmax over the vocabulary", "对整个词表做 softmax"],
  "W-loop-cost.what.ratio": ["naive / cached token-work", "朴素与缓存的工作量之比"],
  "W-loop-cost.flops": ["{n} FLOPs", "{n} FLOPs"],
  "W-loop-cost.bytes": ["{n} bytes", "{n} 字节"],
  "W-loop-cost.readout": [
    ({ p }) => `prompt of ${p === 1 ? "{p} token" : "{p} tokens"}, {n} generated: prefill {prefill} FLOPs, then {each} per token`,
    "提示词 {p} 个词元，生成 {n} 个：预填充 {prefill} FLOPs，之后每个词元 {each}",
  ],
};
