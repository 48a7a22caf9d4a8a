// §04 The loop. Every word of the section, [English, Chinese].

const plural = (n, one, many) => (n === 1 ? one : many);

export default {
  "title-s04": ["4. The loop", "4. 循环"],
  "intro-s04": [
    "So far the model has run once: a prompt went in, one distribution over the next token came out, and section 3 chose a token from it. Generation is that same forward pass, called again and again: run the stack, choose a token, append it to the text, run again on the longer text. There is no separate generation mode, only a loop around what the first three sections built. This section follows the loop for a few steps, then counts what it costs when every step starts from scratch.",
    "到这里，模型只完整地跑过一次：提示词进去，出来一个关于下一个词元的概率分布，第 3 节再从中选出一个词元。生成并不需要另一套机制，就是把同一次前向传播一遍又一遍地调用：跑一遍整个模型，选出一个词元，把它接到文字末尾，再拿变长了的文字跑一遍。没有什么单独的“生成模式”，只是在前三节搭好的东西外面套了一个循环。这一节先跟着这个循环走几步，再算一算：如果每一步都从头算起，要付出多少代价。",
  ],
  "bridge-s04": [
    "So the cached loop wins, and by a margin that grows with every token. But it only works because something keeps the earlier tokens' keys and values between steps. What exactly is kept, and how much room it takes, is section 5.",
    "所以缓存循环赢了，而且每多生成一个词元，赢得就更多。但它之所以成立，是因为有东西在步与步之间保存着先前词元的键和值。到底存了什么、要占多少地方，就是第 5 节的内容。",
  ],
  "loop.step": ["Step", "步数"],
  "loop.step-axis": ["step", "步"],
  "loop.generated": ["Generated tokens", "生成的词元数"],
  "loop.naive-total": ["naive (running total)", "朴素（累计）"],
  "loop.cached-total": ["cached (running total)", "缓存（累计）"],
  "loop.x": ["generated tokens", "已生成的词元数"],
  "loop.y": ["token-work so far (tokens through the stack)", "累计工作量（送过整个模型的词元数）"],
  "loop.cost-readout": [
    ({ n }) => `${plural(n, "{n} token", "{n} tokens")} generated: naive {naive} tokens of work, cached {cached} — {r}× ({rp}× if the cached loop's one pass over the prompt is counted too)`,
    "已生成 {n} 个词元：朴素循环的工作量是 {naive} 个词元，缓存循环是 {cached} 个——{r} 倍（把缓存循环处理提示词的那一遍也算上，是 {rp} 倍）",
  ],

  // W-autoregress
  "title-W-autoregress": ["Each output becomes the next input", "每一步的输出，都是下一步的输入"],
  "before-W-autoregress": [
    "Drag the step slider through twelve greedy steps on your prompt. The grey tokens are the prompt, there from the start; the blue ones were chosen at earlier steps; the yellow one is being chosen at this step. Move one step on and watch the yellow token turn blue: it is now part of what the model reads.",
    "拖动步数滑块，在你的提示词上走十二步贪心生成。灰色的是提示词，一开始就在；蓝色的是前面几步选出的；黄色的是这一步正在选出的词元。往前走一步，看黄色的词元变成蓝色：它已经成了模型要读的输入的一部分。",
  ],
  "after-W-autoregress": [
    "That is all “autoregressive” means: what step t outputs is part of what step t + 1 reads. The model keeps no other memory of its earlier choices than the text itself.",
    "“自回归”的全部意思就在这里：第 t 步的输出，是第 t + 1 步输入的一部分。除了这段文字本身，模型对自己先前的选择没有任何别的记忆。",
  ],
  "W-autoregress.first": [
    ({ n }) => `Step 1: the input is the prompt alone (${plural(n, "{n} token", "{n} tokens")}); the model chose {piece} for position {position}.`,
    "第 1 步：输入只有提示词（{n} 个词元）；模型为位置 {position} 选出了 {piece}。",
  ],
  "W-autoregress.later": [
    ({ k }) => `Step {at}: the input is the prompt and ${plural(k, "the token chosen at step 1", "the {k} tokens chosen before")} ({n} tokens in all); the model chose {piece} for position {position}.`,
    "第 {at} 步：输入是提示词加上之前选出的 {k} 个词元（共 {n} 个）；模型为位置 {position} 选出了 {piece}。",
  ],
  "W-autoregress.next": [" It is part of the input of step {next}.", "它会成为第 {next} 步输入的一部分。"],
  "W-autoregress.last": [" This is the last of the {steps} steps shown, so no step here reads it.",
    "这是这里展示的 {steps} 步中的最后一步，后面没有哪一步再读它。"],

  // W-naive-vs-cached
  "title-W-naive-vs-cached": ["Naive or cached: the same tokens, different work", "朴素还是缓存：同样的词元，不同的工作量"],
  "W-naive-vs-cached.runs-on": [
    "Follows the prompt at the top: both loops really run here on {model}, twelve greedy steps each, and every step is timed.",
    "跟随页面顶部的提示词：两种循环都在 {model} 上实际运行，各走十二步贪心生成，每一步都计时。",
  ],
  "before-W-naive-vs-cached": [
    "The naive loop keeps nothing between steps: to choose token n + 1 it sends all n tokens so far through every layer again. The cached loop keeps each token's keys and values, so once the prompt is in it sends only the newest token. Both run on your prompt, side by side. Drag the step slider: the tokens each loop sends through the model at that step are lit, and the charts show every step's work and time, the two loops on one scale.",
    "朴素循环在步与步之间什么都不保留：要选出第 n + 1 个词元，就得把已有的 n 个词元重新送过每一层。缓存循环保存每个词元的键和值，所以提示词处理完之后，每步只需送入最新的那个词元。两种循环都在你的提示词上运行，并排放在这里。拖动步数滑块：亮起的是这一步各自送进模型的词元；下面的图把每一步的工作量和耗时画出来，两种循环用同一把尺子。",
  ],
  "after-W-naive-vs-cached": [
    "Under the naive loop every step lights the whole prefix again: n tokens of work to gain token n + 1. Under the cached loop only the newest square lights.",
    "在朴素循环里，每往前一步，整个前缀都要重新亮一遍：用 n 个词元的工作量，换来第 n + 1 个词元。在缓存循环里，只有最新的那一格会亮。",
  ],
  "W-naive-vs-cached.again": ["Time both again", "重新计时"],
  "W-naive-vs-cached.naive-runs": ["naive sends:", "朴素循环送入："],
  "W-naive-vs-cached.cached-runs": ["cached sends:", "缓存循环送入："],
  "W-naive-vs-cached.naive": ["naive", "朴素"],
  "W-naive-vs-cached.cached": ["cached", "缓存"],
  "W-naive-vs-cached.work-axis": ["tokens sent through all {layers} layers", "送过全部 {layers} 层的词元数"],
  "W-naive-vs-cached.work-aria": [
    "columns per step, naive beside cached on one axis: over {steps} steps naive grows from {a} to {b} tokens, cached falls to {c} after the prompt",
    "每一步两根柱子，朴素和缓存并排、共用一个坐标轴：{steps} 步里朴素从 {a} 个词元涨到 {b} 个，缓存在提示词之后降到 {c} 个",
  ],
  "W-naive-vs-cached.time-axis": ["time per step (ms)", "每步耗时（毫秒）"],
  "W-naive-vs-cached.step": [
    ({ c }) => `Step {at}: the naive loop sent {n} tokens through the model in {nt} ms; the cached loop sent ${plural(c, "{c} token", "{c} tokens")} in {ct} ms.`,
    "第 {at} 步：朴素循环送入 {n} 个词元，用了 {nt} 毫秒；缓存循环送入 {c} 个，用了 {ct} 毫秒。",
  ],
  "W-naive-vs-cached.total": [
    "All {steps} steps: naive {nw} tokens in {nt} ms, cached {cw} tokens in {ct} ms — {wr}× the work and {tr}× the time.",
    "全部 {steps} 步：朴素 {nw} 个词元、{nt} 毫秒，缓存 {cw} 个词元、{ct} 毫秒——工作量是 {wr} 倍，时间是 {tr} 倍。",
  ],
  "W-naive-vs-cached.same": ["Both loops chose the same {steps} tokens.", "两种循环选出的 {steps} 个词元完全相同。"],
  "W-naive-vs-cached.differ": ["The two loops chose different tokens at some step, which they should not.",
    "两种循环在某一步选出了不同的词元——这本不该发生。"],
  "W-naive-vs-cached.counted": [
    "What ran here: the counts are the tokens each loop actually sent through the model, and they equal <code>cost.py</code>'s formulas for a {p}-token prompt and {n} steps — naive Σ (P + i) = {cnw}, cached P + n − 1 = {ccw}. The times are this machine's, measured just now.",
    "这里实际运行的：计数是两种循环真正送进模型的词元数，与 <code>cost.py</code> 对 {p} 个词元的提示词、{n} 步给出的公式一致——朴素 Σ (P + i) = {cnw}，缓存 P + n − 1 = {ccw}。时间是这台机器刚刚测得的。",
  ],
  "W-naive-vs-cached.miscounted": [
    "What ran here does not match <code>cost.py</code>: the loops sent {nw} and {cw} tokens through the model, the formulas say {cnw} and {ccw}.",
    "实际运行的结果与 <code>cost.py</code> 不一致：两种循环分别送入了 {nw} 和 {cw} 个词元，公式给出的是 {cnw} 和 {ccw}。",
  ],
  "W-naive-vs-cached.narrower": [
    "The time gap ({tr}×) is narrower than the work gap ({wr}×): a step that sends one token is not that much cheaper than a step that sends many.",
    "时间差距（{tr} 倍）比工作量差距（{wr} 倍）小：只送一个词元的一步，并不比送很多个词元的一步便宜多少。",
  ],
  "W-naive-vs-cached.fit": [
    "A straight line through the {points} timed steps says why: a step costs about {a} ms whatever it holds, plus {b} ms for each token in it. At these sizes the fixed part, every weight read once and every layer called once, is most of the bill; section 6 is about exactly that.",
    "把这 {points} 个计时的步骤拟合成一条直线，就能看出原因：不管一步里有多少词元，它都要花大约 {a} 毫秒，每多一个词元再加 {b} 毫秒。在这个规模上，固定的那部分——所有权重读一遍、每一层调用一次——占了大头；第 6 节讲的正是这件事。",
  ],
  "W-naive-vs-cached.follows": ["Here the time follows the work: {tr}× the time for {wr}× the work.",
    "这里时间跟着工作量走：{wr} 倍的工作量，花了 {tr} 倍的时间。"],
  "W-naive-vs-cached.wider": [
    "The time gap ({tr}×) is even wider than the work gap ({wr}×) this run: the machine was busier during the naive steps. Time them again.",
    "这一次时间差距（{tr} 倍）比工作量差距（{wr} 倍）还大：朴素循环运行时机器更忙。请重新计时。",
  ],

  // W-cost-toy
  "title-W-cost-toy": ["What the loop costs: the article's toy", "循环的代价：文章里的玩具模型"],
  "W-cost-toy.runs-on": [
    "Fixed input: the article's toy (4 layers, d = 64) and a 5-token prompt; token counts from <code>cost.py</code>, no model is run.",
    "固定输入：文章里的玩具模型（4 层，d = 64），提示词 5 个词元；词元计数来自 <code>cost.py</code>，不运行模型。",
  ],
  "before-W-cost-toy": [
    "Now spread the gap over a whole generation. Drag the number of generated tokens, or jump to the article's two states, and watch the two running totals pull apart.",
    "现在把这个差距摊到一整次生成上。拖动生成的词元数，或者直接跳到文章里的两个状态，看两条累计曲线怎么越拉越开。",
  ],
  "W-cost-toy.preset-1": ["first token", "第 1 个词元"],
  "W-cost-toy.preset-12": ["12 tokens", "12 个词元"],
  "W-cost-toy.told": [
    "At the first generated token the two are still close: the naive loop pays {r0}×, its {p} prompt tokens against one. By token {n1} the naive total is {r1}× the cached total, and the gap keeps opening: the naive cost grows with the square of the generated length, the cached cost along a straight line. The layers and the width multiply both loops alike, so the ratio depends only on the prompt's length and on how many tokens were generated.",
    "生成第一个词元时，两边还差得不远：朴素循环付出 {r0} 倍——{p} 个提示词词元对一个。到第 {n1} 个时，朴素循环的累计量已经是缓存循环的 {r1} 倍，而且差距还在拉大：朴素的成本随生成长度的平方增长，缓存的成本只沿一条直线增长。层数和宽度对两种循环一视同仁地放大，所以这个比值只取决于提示词有多长、生成了多少个词元。",
  ],
  "after-W-cost-toy": [
    "These ratios are pure counting. The widget above showed what they turn into, in milliseconds, on a real model.",
    "这些比值纯粹是数出来的。上面那个组件已经展示了它们在真实模型上变成多少毫秒。",
  ],

  // W-cost-gpt2
  "title-W-cost-gpt2": ["At GPT-2 small's scale", "放大到 GPT-2 small"],
  "W-cost-gpt2.runs-on": [
    "Fixed input: GPT-2 small (12 layers, d_model 768) and a 20-token prompt; token counts from <code>cost.py</code>, no model is run.",
    "固定输入：GPT-2 small（12 层，d_model 768），提示词 20 个词元；词元计数来自 <code>cost.py</code>，不运行模型。",
  ],
  "before-W-cost-gpt2": [
    "Scale the same count up to GPT-2 small, 12 layers and d_model 768, starting from a 20-token prompt. Drag out to 100 generated tokens, or press the preset.",
    "把同样的计数放大到 GPT-2 small——12 层，d_model 768——从一个 20 个词元的提示词开始。把生成数拖到 100，或者直接按预设按钮。",
  ],
  "W-cost-gpt2.preset-100": ["100 tokens", "100 个词元"],
  "W-cost-gpt2.told": [
    "At {n0} generated tokens the naive loop has done {r0}× the cached loop's work. That is no rounding error: it is the whole reason production systems never re-run the prefix.",
    "生成到 {n0} 个词元时，朴素循环做的工作量是缓存循环的 {r0} 倍。这可不是舍入误差——生产系统从不重跑前缀，原因全在这里。",
  ],
  "after-W-cost-gpt2": [
    "Each step of the cached loop still reads the whole cache, though: the price moves from recomputing to remembering.",
    "不过，缓存循环的每一步仍要把整个缓存读一遍：代价从“重新计算”挪到了“记住”上。",
  ],
};
