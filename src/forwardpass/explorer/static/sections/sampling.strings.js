// §03 What comes out: logits and sampling. Every word of the section, [English, Chinese].

export default {
  "title-s03": ["3. What comes out: logits and sampling", "3. 输出：logits 与采样"],
  "intro-s03": [
    "The last stage gives one score, a logit, per vocabulary entry. Turning scores into a choice is a separate decision, made by the sampler.",
    "最后一个阶段为词表中的每一项给出一个分数，即 logit。把分数变成选择是另一回事，由采样器决定。",
  ],
  "sampling.runs-on": ["The toy's five scores are the article's, fixed; the real model's follow the prompt at the top, on {model}.",
    "玩具例子的五个分数是文章给的，固定不变；真实模型的分数跟随页面顶部的提示词，在 {model} 上计算。"],
  "sampling.toy": ["the article's toy", "文章里的玩具例子"],
  "sampling.real": ["the real model's top 10", "真实模型的前 10 名"],

  // W-logits
  "title-W-logits": ["Raw scores", "原始分数"],
  "before-W-logits": ["Left: a five-word toy. Right: the real model's ten best tokens for your prompt.",
    "左边是一个五个词的玩具例子，右边是真实模型对你的提示词给出的前十个词元。"],
  "after-W-logits": ["Logits have no fixed range and only their differences matter; softmax turns them into probabilities.",
    "logit 没有固定范围，只有差值有意义；softmax 把它们变成概率。"],
  "W-logits.readout": ["toy: {toy} leads at {tl}; real: {piece} leads at {rl} over {vocab} tokens",
    "玩具例子：{toy} 以 {tl} 领先；真实模型：{piece} 以 {rl} 在 {vocab} 个词元中领先"],

  // W-temperature
  "title-W-temperature": ["Temperature reshapes, never reorders", "温度改变形状，不改变次序"],
  "before-W-temperature": [
    "Move T. A low T sharpens the distribution towards the leader, a high T flattens it. \"Draw a token\" samples from the whole vocabulary.",
    "调节 T。T 越低，分布越集中于领先者；T 越高，分布越平。“抽一个词元”会从整个词表中采样。",
  ],
  "after-W-temperature": ["The order of the candidates never changes; at T = 0 the sampler simply takes the top one (greedy decoding).",
    "候选的次序从不改变；T = 0 时采样器直接取第一名（贪心解码）。"],
  "W-temperature.label": ["Temperature T", "温度 T"],
  "W-temperature.draw": ["Draw a token (full vocabulary)", "抽一个词元（整个词表）"],
  "W-temperature.readout": ["T = {t}: {toy} {p} (toy); real top {piece} {rp} of the full vocabulary",
    "T = {t}：{toy} {p}（玩具例子）；真实模型的第一名 {piece} 在整个词表中占 {rp}"],
  "W-temperature.drew": ["drew {piece} (id {id}) at T = {t} from all tokens", "在 T = {t} 下从全部词元中抽到 {piece}（编号 {id}）"],

  // W-top-k
  "title-W-top-k": ["Top-k: keep the k best", "Top-k：保留前 k 个"],
  "before-W-top-k": ["Keep only the k highest-scoring tokens, then renormalize.", "只保留分数最高的 k 个词元，然后重新归一化。"],
  "after-W-top-k": [
    "k ignores the shape: on a flat distribution it cuts plausible tokens, on a peaked one it keeps unlikely ones.",
    "k 不看分布形状：分布平坦时会砍掉合理的词元，分布尖锐时又会留下不太可能的词元。",
  ],
  "W-top-k.readout": ["k = {k}: keeps {kept}; cuts {toy} of the toy's mass, {real} of the real model's",
    "k = {k}：保留 {kept}；砍掉玩具例子 {toy} 的概率，真实模型 {real} 的概率"],

  // W-top-p
  "title-W-top-p": ["Top-p: the smallest set that reaches p", "Top-p：累计达到 p 的最小集合"],
  "before-W-top-p": ["Keep the fewest tokens whose probabilities add up to at least p.", "保留概率之和至少为 p 的最少几个词元。"],
  "after-W-top-p": ["The set adapts to the shape: a few tokens when the model is sure, many when it is not.",
    "这个集合随分布形状变化：模型有把握时只有几个，没把握时有很多。"],
  "W-top-p.readout": ["p = {p}: {n} of 5 toy candidates survive ({kept}); the real model keeps {rk} of {vocab} tokens",
    "p = {p}：5 个玩具候选中留下 {n} 个（{kept}）；真实模型在 {vocab} 个词元中保留 {rk} 个"],

  // W-greedy-loop
  "title-W-greedy-loop": ["Greedy decoding loops", "贪心解码会陷入循环"],
  "before-W-greedy-loop": [
    "Greedy decoding always takes the top token, so once a phrase repeats, it tends to repeat for good. Run it, then force one sampled token at a step of your choice.",
    "贪心解码总取第一名，所以一旦某个短语重复，往往就一直重复下去。先运行一次，再在你选定的一步强制采样一个词元。",
  ],
  "after-W-greedy-loop": [
    "The verdict is measured over the window stated in the result, not guessed. A single sample changes the text, but greedy decoding after it often finds a new loop.",
    "结论是在结果中注明的窗口内测得的，而不是猜的。一次采样会改变文字，但之后的贪心解码常常又落入新的循环。",
  ],
  "W-greedy-loop.prompt": ["Prompt", "提示词"],
  "W-greedy-loop.at": ["Sample once at step", "在第几步采样一次"],
  "W-greedy-loop.run": ["Run greedy, then force one sample", "先贪心运行，再强制采样一次"],
  "W-greedy-loop.aria.greedy": ["greedy output", "贪心解码的输出"],
  "W-greedy-loop.aria.forced": ["output with one sample", "采样一次后的输出"],
  "W-greedy-loop.greedy": ["greedy:", "贪心解码："],
  "W-greedy-loop.forced": ["one sample at step {at}:", "在第 {at} 步采样一次："],
  "W-greedy-loop.loop": ["loops with period {period} from token {start}", "从第 {start} 个词元起以周期 {period} 循环"],
  "W-greedy-loop.no-loop": ["no loop", "没有循环"],
  "W-greedy-loop.again": ["the sample changed the text, and greedy decoding after it looped again",
    "采样改变了文字，但之后的贪心解码又陷入了循环"],
  "W-greedy-loop.broke": ["the sample broke the loop for the rest of the window", "这次采样在窗口的剩余部分打破了循环"],
  "W-greedy-loop.none": ["greedy did not loop in this window", "贪心解码在这个窗口内没有循环"],
  "W-greedy-loop.readout": ["over {steps} generated tokens: greedy {greedy}; with one sample at step {at} ({piece}): {forced} — {verdict}",
    "在生成的 {steps} 个词元内：贪心解码{greedy}；在第 {at} 步采样一次（{piece}）后：{forced}——{verdict}"],
};
