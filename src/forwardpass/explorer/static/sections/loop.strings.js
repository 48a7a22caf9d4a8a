// §04 The loop. Every word of the section, [English, Chinese].

const tokens = ({ n }) => (n === 1 ? "{n} token" : "{n} tokens");

export default {
  "title-s04": ["4. The loop", "4. 循环"],
  "intro-s04": ["Generation is a loop: run the model, choose a token, append it, run again.",
    "生成就是一个循环：运行模型，选出一个词元，把它接上，再运行。"],
  "loop.tokens": [tokens, "{n} 个词元"],
  "loop.generated": ["Generated tokens", "生成的词元数"],
  "loop.naive-total": ["naive (total)", "朴素（累计）"],
  "loop.cached-total": ["cached (total)", "缓存（累计）"],
  "loop.x": ["generated tokens", "生成的词元数"],
  "loop.y": ["token-work (tokens through the stack, total)", "工作量（穿过整个模型的词元数，累计）"],

  // W-autoregress
  "title-W-autoregress": ["Each output becomes the next input", "每一步的输出是下一步的输入"],
  "before-W-autoregress": [
    "Step through twelve greedy steps on your prompt; the highlighted token is the one being chosen at that step.",
    "在你的提示词上逐步查看十二步贪心生成；高亮的是这一步正在选出的词元。",
  ],
  "after-W-autoregress": ["Only the chosen token feeds the next step: the model has no memory beyond the text and its cache.",
    "只有被选中的词元进入下一步：除了文字和缓存，模型没有别的记忆。"],
  "W-autoregress.step": ["Step", "步"],
  "W-autoregress.readout": [
    ({ n }) => `step {at}: ran ${n === 1 ? "{n} token" : "{n} tokens"}, chose {piece} at position {position}; it is the input of step {next}`,
    "第 {at} 步：运行了 {n} 个词元，在位置 {position} 选出 {piece}；它是第 {next} 步的输入",
  ],

  // W-naive-vs-cached
  "title-W-naive-vs-cached": ["Naive or cached", "朴素还是缓存"],
  "before-W-naive-vs-cached": [
    "A naive loop runs the whole prefix through every layer at every step. A cached loop keeps each token's keys and values, so only the newest token runs.",
    "朴素循环每一步都让整个前缀穿过所有层；缓存循环保存每个词元的键和值，所以只需运行最新的那个词元。",
  ],
  "after-W-naive-vs-cached": ["The naive loop's work grows every step; the cached loop's stays at one token once the prompt is in.",
    "朴素循环的工作量每步都在增长；缓存循环在提示词处理完后每步只算一个词元。"],
  "W-naive-vs-cached.legend": ["Mode", "模式"],
  "W-naive-vs-cached.cached": ["cached", "缓存"],
  "W-naive-vs-cached.naive": ["naive", "朴素"],
  "W-naive-vs-cached.chart": ["{mode}: tokens through all {layers} layers", "{mode}：穿过全部 {layers} 层的词元数"],
  "W-naive-vs-cached.bar": ["step {s}", "第 {s} 步"],
  "W-naive-vs-cached.readout": [
    ({ steps }) => `{mode}: {work} of work for ${steps === 1 ? "{steps} new token" : "{steps} new tokens"}`,
    "{mode}：为 {steps} 个新词元做了 {work}的工作",
  ],
  "W-naive-vs-cached.why.naive": [" (the whole prefix, every step)", "（每一步都是整个前缀）"],
  "W-naive-vs-cached.why.cached": [" (the prompt once, then only the newest token)", "（提示词只算一次，之后只算最新的词元）"],

  // W-cost-toy
  "title-W-cost-toy": ["What the loop costs: a toy", "循环的代价：玩具模型"],
  "before-W-cost-toy": ["Four layers, d = 64, a five-token prompt. Drag the number of generated tokens.",
    "四层，d = 64，五个词元的提示词。拖动生成的词元数。"],
  "after-W-cost-toy": ["Naive work grows with the square of the length, cached work in a straight line.",
    "朴素循环的工作量随长度平方增长，缓存循环则线性增长。"],
  "W-cost-toy.runs-on": ["Fixed input: the article's toy, a 5-token prompt; token-work arithmetic, no model is run.",
    "固定输入：文章里的玩具例子，5 个词元的提示词；只算词元工作量，不运行模型。"],
  "W-cost-toy.readout": ["{n} generated: naive costs {r}× cached ({rp}× counting the cached prefill)",
    "生成 {n} 个：朴素的代价是缓存的 {r} 倍（把缓存的预填充也算上是 {rp} 倍）"],

  // W-cost-gpt2
  "title-W-cost-gpt2": ["What the loop costs: GPT-2 small", "循环的代价：GPT-2 small"],
  "before-W-cost-gpt2": ["The same comparison for GPT-2 small and a 20-token prompt.", "同样的比较，换成 GPT-2 small 和 20 个词元的提示词。"],
  "after-W-cost-gpt2": ["At a few hundred tokens the naive loop does many times the work of the cached one.",
    "生成几百个词元时，朴素循环的工作量是缓存循环的许多倍。"],
  "W-cost-gpt2.runs-on": ["Fixed input: GPT-2 small with a 20-token prompt; token-work arithmetic, no model is run.",
    "固定输入：GPT-2 small，20 个词元的提示词；只算词元工作量，不运行模型。"],
  "W-cost-gpt2.readout": ["{n} generated: naive costs {r}× cached — quadratic against linear",
    "生成 {n} 个：朴素的代价是缓存的 {r} 倍——平方对线性"],
};
