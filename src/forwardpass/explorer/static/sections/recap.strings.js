// §08 Open the loop again. Every word of the section, [English, Chinese].

export default {
  "title-s08": ["8. Open the loop again", "8. 再次打开循环"],
  "intro-s08": ["What to keep, and where to go next.", "值得记住的，以及接下来读什么。"],
  "title-W-reopen": ["The whole pass, and further reading", "整个前向传播，以及延伸阅读"],
  "before-W-reopen": [
    "Text becomes ids, ids become rows, blocks add their work into one stream, the last vector becomes scores, a sampler chooses, and the loop runs again with a cache. Jump back to any part:",
    "文字变成编号，编号变成行，各个块把计算结果加进同一条残差流，最后一个向量变成分数，采样器做出选择，循环带着缓存再次运行。跳回任意一部分：",
  ],
  "after-W-reopen": [
    "Further reading: Vaswani et al., <cite>Attention Is All You Need</cite> (2017); Radford et al., <cite>Language Models are Unsupervised Multitask Learners</cite> (GPT-2, 2019); Holtzman et al., <cite>The Curious Case of Neural Text Degeneration</cite> (top-p, 2019); Kwon et al., <cite>Efficient Memory Management for Large Language Model Serving with PagedAttention</cite> (<cite>vLLM</cite>, 2023); Karpathy's <cite>nanoGPT</cite>; <cite>llama.cpp</cite>.",
    "延伸阅读：<cite>Vaswani et al., Attention Is All You Need</cite>（2017）；<cite>Radford et al., Language Models are Unsupervised Multitask Learners</cite>（GPT-2，2019）；<cite>Holtzman et al., The Curious Case of Neural Text Degeneration</cite>（top-p，2019）；<cite>Kwon et al., Efficient Memory Management for Large Language Model Serving with PagedAttention</cite>（<cite>vLLM</cite>，2023）；<cite>Karpathy, nanoGPT</cite>；<cite>llama.cpp</cite>。",
  ],
  "reopen-button": ["Open the loop again", "再次打开循环"],
  "W-reopen.runs-on": ["The page itself: its sections and widgets.", "本页自身：它的各节和组件。"],
  "W-reopen.readout": ["{sections} sections and {widgets} widgets; those that follow the prompt ran on {model}",
    "共 {sections} 节、{widgets} 个组件；跟随提示词的那些在 {model} 上运行"],
  "W-reopen.back": ["back at the start: change the prompt and follow it through again", "回到开头：改一下提示词，再从头跟一遍"],
};
