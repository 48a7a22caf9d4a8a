// The page's own words (header, states, errors, charts), [English, Chinese]. Each section's words are in
// sections/<name>.strings.js. See lib/i18n.js for the template rules.

export default {
  "page-head": ["forwardpass explorer — the Transformer forward pass", "forwardpass 演示 —— Transformer 前向传播"],
  "page-title": ["The Transformer forward pass, live", "Transformer 前向传播，实时演示"],
  "page-intro": [
    "This page walks through how a language model turns text into its next word. Widgets marked “follows the prompt” run the model named here on your prompt; the others compute the article's formulas on the fixed shapes they name. Type your own prompt and watch them follow it.",
    "本页逐步说明语言模型如何把文字变成下一个词。标着“跟随提示词”的组件用下面注明的模型处理你的提示词；其余组件按各自注明的固定形状计算文章里的公式。输入你自己的提示词，看它们如何随之变化。",
  ],
  "page-model": ["Model on this page:", "本页使用的模型："],
  "prompt-label": ["Prompt", "提示词"],
  "model-label": ["Model", "模型"],
  "lang-group": ["Language", "语言"],

  // what a widget runs on (lib/widget.js: runsOn)
  "runs-on.prompt": ["Follows the prompt at the top, on {model}.", "跟随页面顶部的提示词，在 {model} 上计算。"],
  "runs-on.own-prompt": ["Runs on its own prompt below (not the one at the top), on {model}.",
    "使用下方它自己的提示词（不是页面顶部那个），在 {model} 上计算。"],
  "runs-on.model": ["Shows {model}.", "展示的是 {model}。"],
  "runs-on.picture": ["A picture of the idea: nothing is computed.", "这是一张示意图：不做任何计算。"],
  "runs-on.gpt2": ["Fixed input: GPT-2 small's shape (d_model 768, 50,257-token vocabulary, 1,024 positions); arithmetic, no model is run.",
    "固定输入：GPT-2 small 的形状（d_model 768，词表 50,257，位置 1,024）；只做算术，不运行模型。"],
  "runs-on.gpt3": ["Fixed input: GPT-3 175B's shape (96 layers, d_model 12,288) in 16-bit floats; arithmetic, no model is run.",
    "固定输入：GPT-3 175B 的形状（96 层，d_model 12,288），16 位浮点；只做算术，不运行模型。"],

  // a widget's states (lib/widget.js)
  "not-run": ["not run yet: press the button above", "还没有运行：请按上方的按钮"],
  "notice.error": ["This widget's last request failed: {message}.", "这个组件的上一次请求失败了：{message}。"],
  "notice.previous": [" What it shows is its previous result, out of date.", "下面显示的是它上一次的结果，已经过时。"],
  "notice.stale.prompt": ["Out of date: the prompt changed after this run. Run it again to see the new one.",
    "已过时：运行之后提示词改了。再运行一次，就能看到新提示词的结果。"],
  "notice.stale.model": ["Out of date: the model changed after this run. Run it again to see the new one.",
    "已过时：运行之后模型换了。再运行一次，就能看到新模型的结果。"],
  "notice.stale.inputs": ["Out of date: its settings changed after this run. Run it again to see them.",
    "已过时：运行之后设置改了。再运行一次，就能看到新设置的结果。"],

  // the status line at the top
  "status.computing": ["computing …", "正在计算……"],
  "status.loading": ["loading {model} …", "正在加载 {model}……"],
  "status.model-failed": ["{model} could not be loaded: {message}", "无法加载 {model}：{message}"],

  // errors the explorer names (its JSON's code and params)
  "error.network": ["the explorer did not answer (is it still running?)", "服务端没有响应（它还在运行吗？）"],
  "error.http": ["the explorer answered with status {status}", "服务端返回了状态码 {status}"],
  "error.internal": ["an internal error in the explorer ({type}); its log says more", "服务端内部出错（{type}），详情见它的日志"],
  "error.range": ["{what} must be between {lo} and {hi}", "{what} 必须在 {lo} 到 {hi} 之间"],
  "error.empty_prompt": ["type a prompt: this one holds no tokens", "请输入提示词：现在的提示词一个词元也没有"],
  "error.context": ["the prompt is longer than the model's context of {context} tokens",
    "提示词超出了模型的上下文长度（{context} 个词元）"],
  "error.context_fit": ["the prompt and the new tokens must fit the model's context of {context} tokens",
    "提示词加上新生成的词元必须装得进模型的上下文（{context} 个词元）"],
  "error.ring_fit": ["the prompt is {tokens} tokens, more than the ring's {capacity} slots: shorten it or add slots",
    "提示词有 {tokens} 个词元，比环形缓冲区的 {capacity} 个槽位还多：请缩短提示词或增加槽位"],
  "error.choice": ["the layer must be below {layers}, the head below {heads} and the token below {tokens}",
    "层号必须小于 {layers}，头号小于 {heads}，词元位置小于 {tokens}"],
  "error.mode": ["the mode must be add or replace", "模式只能是相加或替换"],
  "error.sample_at": ["the sampled step must be one of the {steps} generated steps", "采样的那一步必须是生成的 {steps} 步之一"],
  "error.no_model": ["this explorer has no model {model}", "这里没有名为 {model} 的模型"],
  "error.bad_query": ["the request's numbers could not be read", "请求里的数字无法读取"],
  "what.steps": ["steps", "步数"],
  "what.context": ["the context", "上下文长度"],
  "what.sequences": ["sequences", "序列数"],
  "what.tokens": ["prompt and new tokens", "提示词和新词元数"],

  // charts (lib/charts.js)
  "chart.lines": ["line chart of {y} against {x}, {x0} to {x1}: {series}", "折线图，{y} 随 {x} 变化，{x0} 到 {x1}：{series}"],
  "chart.series": ["{name} from {a} to {b}", "{name} 从 {a} 到 {b}"],
};
