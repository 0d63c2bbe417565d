<?xml version="1.0" encoding="utf-8"?>
<!DOCTYPE TS>
<TS version="2.1" language="zh_CN">
<context>
    <name>AckDialog</name>
    <message>
        <source>Snooze finding</source>
        <translation>暂缓问题</translation>
    </message>
    <message>
        <source>Acknowledge finding</source>
        <translation>确认问题</translation>
    </message>
    <message>
        <source>why (ticket, planned fix…)</source>
        <translation>原因（工单、计划修复…）</translation>
    </message>
    <message>
        <source>Note:</source>
        <translation>备注：</translation>
    </message>
    <message>
        <source>Until:</source>
        <translation>截止：</translation>
    </message>
    <message>
        <source>Holds until the finding worsens (its severity rises).</source>
        <translation>在问题加重（级别升高）之前一直有效。</translation>
    </message>
</context>
<context>
    <name>CardChange</name>
    <message>
        <source>enrolled</source>
        <translation>首次登记</translation>
    </message>
    <message>
        <source>appeared</source>
        <translation>出现</translation>
    </message>
    <message>
        <source>moved</source>
        <translation>移位</translation>
    </message>
    <message>
        <source>disappeared</source>
        <translation>消失</translation>
    </message>
    <message>
        <source>driver changed</source>
        <translation>驱动变更</translation>
    </message>
    <message>
        <source>vbios changed</source>
        <translation>VBIOS 变更</translation>
    </message>
    <message>
        <source>serial changed</source>
        <translation>序列号变更</translation>
    </message>
    <message>
        <source>power limit changed</source>
        <translation>功耗上限变更</translation>
    </message>
    <message>
        <source>placed</source>
        <translation>安装位置</translation>
    </message>
    <message>
        <source>{node} by {who} ({origin}): {why}</source>
        <translation>{node}，操作人 {who}（{origin}）：{why}</translation>
    </message>
    <message>
        <source>{node} by {who} ({origin})</source>
        <translation>{node}，操作人 {who}（{origin}）</translation>
    </message>
    <message>
        <source>on {node}: {reason}</source>
        <translation>在 {node}：{reason}</translation>
    </message>
    <message>
        <source>intake {verdict}</source>
        <translation>验收 {verdict}</translation>
    </message>
    <message>
        <source>in {place}</source>
        <translation>位于 {place}</translation>
    </message>
    <message>
        <source>from {place}</source>
        <translation>原位于 {place}</translation>
    </message>
    <message>
        <source>{node} #{index} until {time}</source>
        <translation>{node} #{index}，至 {time}</translation>
    </message>
</context>
<context>
    <name>Change</name>
    <message>
        <source>new</source>
        <translation>新增</translation>
    </message>
    <message>
        <source>worsened</source>
        <translation>加重</translation>
    </message>
    <message>
        <source>resolved</source>
        <translation>已恢复</translation>
    </message>
    <message>
        <source>inventory</source>
        <translation>资产变更</translation>
    </message>
</context>
<context>
    <name>ChecklistModel</name>
    <message>
        <source> by {name}</source>
        <translation>（{name}）</translation>
    </message>
    <message>
        <source>snoozed{who} until {time}</source>
        <translation>已暂缓{who}至 {time}</translation>
    </message>
    <message>
        <source>acknowledged{who}</source>
        <translation>已确认{who}</translation>
    </message>
    <message>
        <source>{count} open</source>
        <translation>{count} 个未关闭</translation>
    </message>
    <message>
        <source>{acked} of {count}</source>
        <translation>{acked} / {count}</translation>
    </message>
    <message>
        <source>node</source>
        <translation>节点</translation>
    </message>
</context>
<context>
    <name>CollectorProcess</name>
    <message>
        <source>collector: starting</source>
        <translation>采集：启动中</translation>
    </message>
    <message>
        <source>collector: child process {pid}, every {seconds} s</source>
        <translation>采集：子进程 {pid}，每 {seconds} 秒</translation>
    </message>
    <message>
        <source>collector: stopped</source>
        <translation>采集：已停止</translation>
    </message>
    <message>
        <source>collector: crashed: {reason} (Poll now restarts it)</source>
        <translation>采集：崩溃：{reason}（“立即采集”可重新启动）</translation>
    </message>
    <message>
        <source>collector: crashed (Poll now restarts it)</source>
        <translation>采集：崩溃（“立即采集”可重新启动）</translation>
    </message>
    <message>
        <source>collector: exited with code {code}: {reason} (Poll now restarts it)</source>
        <translation>采集：已退出，退出码 {code}：{reason}（“立即采集”可重新启动）</translation>
    </message>
    <message>
        <source>collector: exited with code {code} (Poll now restarts it)</source>
        <translation>采集：已退出，退出码 {code}（“立即采集”可重新启动）</translation>
    </message>
    <message>
        <source>collector: could not start {program}: {error}</source>
        <translation>采集：无法启动 {program}：{error}</translation>
    </message>
</context>
<context>
    <name>Column</name>
    <message>
        <source>Node</source>
        <translation>节点</translation>
    </message>
    <message>
        <source>GPU</source>
        <translation>GPU</translation>
    </message>
    <message>
        <source>Model</source>
        <translation>型号</translation>
    </message>
    <message>
        <source>Vendor</source>
        <translation>厂商</translation>
    </message>
    <message>
        <source>Driver</source>
        <translation>驱动</translation>
    </message>
    <message>
        <source>Temp</source>
        <translation>温度</translation>
    </message>
    <message>
        <source>Power / limit</source>
        <translation>功耗 / 上限</translation>
    </message>
    <message>
        <source>Util</source>
        <translation>利用率</translation>
    </message>
    <message>
        <source>Last seen</source>
        <translation>最后上报</translation>
    </message>
    <message>
        <source>Status</source>
        <translation>状态</translation>
    </message>
    <message>
        <source>Health</source>
        <translation>健康</translation>
    </message>
    <message>
        <source>Intake</source>
        <translation>验收</translation>
    </message>
    <message>
        <source>Name</source>
        <translation>名称</translation>
    </message>
    <message>
        <source>Severity</source>
        <translation>级别</translation>
    </message>
    <message>
        <source>Kind</source>
        <translation>类型</translation>
    </message>
    <message>
        <source>Since</source>
        <translation>起始</translation>
    </message>
    <message>
        <source>Last evidence</source>
        <translation>最新证据</translation>
    </message>
    <message>
        <source>Action</source>
        <translation>处理建议</translation>
    </message>
    <message>
        <source>Evidence</source>
        <translation>证据</translation>
    </message>
    <message>
        <source>Acknowledged</source>
        <translation>已确认</translation>
    </message>
    <message>
        <source>Group</source>
        <translation>分组</translation>
    </message>
    <message>
        <source>Nodes</source>
        <translation>节点数</translation>
    </message>
    <message>
        <source>GPUs</source>
        <translation>GPU 数</translation>
    </message>
    <message>
        <source>CUDA driver / runtime</source>
        <translation>CUDA 驱动 / 运行时</translation>
    </message>
    <message>
        <source>VBIOS</source>
        <translation>VBIOS</translation>
    </message>
    <message>
        <source>Firmware</source>
        <translation>固件</translation>
    </message>
    <message>
        <source>Node / finding</source>
        <translation>节点 / 问题</translation>
    </message>
    <message>
        <source>Verdict</source>
        <translation>结论</translation>
    </message>
    <message>
        <source>Summary</source>
        <translation>摘要</translation>
    </message>
    <message>
        <source>Change</source>
        <translation>变化</translation>
    </message>
    <message>
        <source>Where</source>
        <translation>位置</translation>
    </message>
    <message>
        <source>When (UTC)</source>
        <translation>时间（UTC）</translation>
    </message>
    <message>
        <source>Reasons</source>
        <translation>原因</translation>
    </message>
    <message>
        <source>Slurm</source>
        <translation>Slurm</translation>
    </message>
    <message>
        <source>What</source>
        <translation>项目</translation>
    </message>
    <message>
        <source>Value</source>
        <translation>值</translation>
    </message>
    <message>
        <source>Cards</source>
        <translation>卡数</translation>
    </message>
    <message>
        <source>Days</source>
        <translation>天数</translation>
    </message>
    <message>
        <source>When</source>
        <translation>时间</translation>
    </message>
    <message>
        <source>Detail</source>
        <translation>详情</translation>
    </message>
</context>
<context>
    <name>CustomRangeDialog</name>
    <message>
        <source>Custom time range</source>
        <translation>自定义时间范围</translation>
    </message>
    <message>
        <source>From</source>
        <translation>从</translation>
    </message>
    <message>
        <source>To</source>
        <translation>到</translation>
    </message>
</context>
<context>
    <name>DateAxis</name>
    <message>
        <source>%a %d</source>
        <translation>%d日 %a</translation>
    </message>
    <message>
        <source>%b</source>
        <translation>%b</translation>
    </message>
</context>
<context>
    <name>Derating</name>
    <message>
        <source>clock under load / boost</source>
        <translation>负载频率 / 加速频率</translation>
    </message>
    <message>
        <source>power limit / TDP</source>
        <translation>功耗上限 / TDP</translation>
    </message>
    <message>
        <source>memory / model&apos;s usual</source>
        <translation>显存 / 同型号常见值</translation>
    </message>
    <message>
        <source>PCIe link / nominal</source>
        <translation>PCIe 链路 / 标称</translation>
    </message>
    <message>
        <source>30 days</source>
        <translation>30 天</translation>
    </message>
    <message>
        <source>90 days</source>
        <translation>90 天</translation>
    </message>
    <message>
        <source>1 year</source>
        <translation>1 年</translation>
    </message>
    <message>
        <source>unknown model</source>
        <translation>未知型号</translation>
    </message>
    <message>
        <source>select a GPU</source>
        <translation>请选择一块 GPU</translation>
    </message>
    <message>
        <source>reading…</source>
        <translation>读取中…</translation>
    </message>
    <message>
        <source>no derating days for this GPU in this window</source>
        <translation>此 GPU 在该时间窗口内没有降额记录</translation>
    </message>
    <message>
        <source> (user spec)</source>
        <translation>（用户规格）</translation>
    </message>
    <message>
        <source> (some cards: user spec)</source>
        <translation>（部分卡：用户规格）</translation>
    </message>
    <message>
        <source>{source} for {match}</source>
        <translation>{source}，适用于 {match}</translation>
    </message>
    <message>
        <source>{source} for every card</source>
        <translation>{source}，适用于所有卡</translation>
    </message>
    <message>
        <source>{model}: nominal figures from the fleet file&apos;s [[spec]] tables: {sources}</source>
        <translation>{model}：标称值来自集群文件的 [[spec]] 表：{sources}</translation>
    </message>
    <message>
        <source>{model}, {cards} cards: {ratio}, min · median · max of the cards&apos; medians</source>
        <translation>{model}，{cards} 张卡：{ratio}，各卡中位数的最小 · 中位 · 最大</translation>
    </message>
    <message>
        <source>against nominal: {min} · {median} · {max} (the model&apos;s usual is {usual} of nominal: what its boards report)</source>
        <translation>相对标称：{min} · {median} · {max}（该型号常见值为标称的 {usual}：即其板卡上报的值）</translation>
    </message>
    <message>
        <source>{ratio}
min · median · max</source>
        <translation>{ratio}
最小 · 中位 · 最大</translation>
    </message>
    <message>
        <source>Each card&apos;s reported memory against the median of its model&apos;s cards (100 % = as its peers; the nominal share is in the cell&apos;s tooltip)</source>
        <translation>每张卡上报的显存与同型号各卡中位数之比（100 % = 与同型号一致；相对标称的比例见单元格提示）</translation>
    </message>
    <message>
        <source>Each card&apos;s median daily ratio to the nominal spec (100 % = as specified)</source>
        <translation>每张卡每日相对标称规格之比的中位数（100 % = 符合规格）</translation>
    </message>
    <message>
        <source>Clock / boost per card (bar: the model&apos;s median)</source>
        <translation>每卡频率 / 加速频率（横线：该型号中位数）</translation>
    </message>
    <message>
        <source>One dot per card: its median clock under load against the boost clock. Hover a dot to name the card, click it to open it.</source>
        <translation>每个点代表一张卡：其负载频率中位数与加速频率之比。鼠标悬停显示卡名，点击打开该卡。</translation>
    </message>
</context>
<context>
    <name>DeratingView</name>
    <message>
        <source>&lt;b&gt;Derating&lt;/b&gt;: daily ratio to the nominal spec (1.0 = as specified)</source>
        <translation>&lt;b&gt;降额&lt;/b&gt;：每日相对标称规格之比（1.0 = 符合规格）</translation>
    </message>
    <message>
        <source>Memory is compared with the model&apos;s usual (its cards&apos; median): no board reports its marketing size.</source>
        <translation>显存与同型号常见值（各卡中位数）比较：没有板卡会上报其宣传容量。</translation>
    </message>
    <message>
        <source>Window:</source>
        <translation>时间窗口：</translation>
    </message>
    <message>
        <source>model&apos;s fleet median (clock)</source>
        <translation>同型号集群中位数（频率）</translation>
    </message>
    <message>
        <source>1.0 = nominal</source>
        <translation>1.0 = 标称</translation>
    </message>
    <message>
        <source>Click a dot (or a GPU in the fleet view) to see its daily ratios.</source>
        <translation>点击一个点（或集群视图中的 GPU）查看其每日比值。</translation>
    </message>
    <message>
        <source>1 GPU-day</source>
        <translation>1 个 GPU·日</translation>
    </message>
    <message>
        <source>{count} GPU-days</source>
        <translation>{count} 个 GPU·日</translation>
    </message>
    <message>
        <source>1 model</source>
        <translation>1 个型号</translation>
    </message>
    <message>
        <source>{count} models</source>
        <translation>{count} 个型号</translation>
    </message>
    <message>
        <source>{days}, {models} · read {ms} ms</source>
        <translation>{days}，{models} · 读取 {ms} ms</translation>
    </message>
    <message>
        <source>{ratio}: {value} ({nominal} of nominal)</source>
        <translation>{ratio}：{value}（标称的 {nominal}）</translation>
    </message>
    <message>
        <source>{ratio}: {value}</source>
        <translation>{ratio}：{value}</translation>
    </message>
    <message>
        <source>click to open this card</source>
        <translation>点击打开此卡</translation>
    </message>
    <message>
        <source>no derating days in this window</source>
        <translation>该时间窗口内没有降额记录</translation>
    </message>
    <message>
        <source> · nominal from user spec ({source})</source>
        <translation> · 标称值来自用户规格（{source}）</translation>
    </message>
    <message>
        <source>&lt;b&gt;{node} GPU {index}&lt;/b&gt; — {model}</source>
        <translation>&lt;b&gt;{node} GPU {index}&lt;/b&gt; — {model}</translation>
    </message>
</context>
<context>
    <name>Evidence</name>
    <message>
        <source>majority</source>
        <translation>多数版本</translation>
    </message>
    <message>
        <source>expected</source>
        <translation>指定版本</translation>
    </message>
    <message>
        <source>{temp}, limit {limit} (critical {critical}) for {minutes} min</source>
        <translation>{temp}，上限 {limit}（严重 {critical}），持续 {minutes} 分钟</translation>
    </message>
    <message>
        <source>{temp}, limit {limit} (critical {critical})</source>
        <translation>{temp}，上限 {limit}（严重 {critical}）</translation>
    </message>
    <message>
        <source>{temp}, limit {limit} for {minutes} min</source>
        <translation>{temp}，上限 {limit}，持续 {minutes} 分钟</translation>
    </message>
    <message>
        <source>{temp}, limit {limit}</source>
        <translation>{temp}，上限 {limit}</translation>
    </message>
    <message>
        <source>thermal slowdown {minutes} min ({reasons}), peak {peak}, slowdown {slowdown}</source>
        <translation>过热降频 {minutes} 分钟（{reasons}），峰值 {peak}，降频温度 {slowdown}</translation>
    </message>
    <message>
        <source>thermal slowdown {minutes} min ({reasons}), peak {peak}</source>
        <translation>过热降频 {minutes} 分钟（{reasons}），峰值 {peak}</translation>
    </message>
    <message>
        <source>thermal slowdown {minutes} min ({reasons})</source>
        <translation>过热降频 {minutes} 分钟（{reasons}）</translation>
    </message>
    <message>
        <source>fan 0 % at {temp} for {minutes} min</source>
        <translation>风扇 0 %，温度 {temp}，持续 {minutes} 分钟</translation>
    </message>
    <message>
        <source>{new} new uncorrectable, volatile {volatile}, aggregate {aggregate}, limit 0</source>
        <translation>新增不可纠正 {new}，易失计数 {volatile}，累计 {aggregate}，上限 0</translation>
    </message>
    <message>
        <source>{rate} corrected/min, limit {limit}/min (total {total})</source>
        <translation>可纠正 {rate} 次/分钟，上限 {limit} 次/分钟（共 {total}）</translation>
    </message>
    <message>
        <source>{total} retired pages (SBE {sbe}, DBE {dbe}), limit {limit}, retirement pending (reset needed)</source>
        <translation>退役页 {total}（SBE {sbe}，DBE {dbe}），上限 {limit}，退役待生效（需重置）</translation>
    </message>
    <message>
        <source>{total} retired pages (SBE {sbe}, DBE {dbe}), limit {limit}</source>
        <translation>退役页 {total}（SBE {sbe}，DBE {dbe}），上限 {limit}</translation>
    </message>
    <message>
        <source>{total} retired pages (SBE {sbe}, DBE {dbe}), retirement pending (reset needed)</source>
        <translation>退役页 {total}（SBE {sbe}，DBE {dbe}），退役待生效（需重置）</translation>
    </message>
    <message>
        <source>{total} retired pages (SBE {sbe}, DBE {dbe})</source>
        <translation>退役页 {total}（SBE {sbe}，DBE {dbe}）</translation>
    </message>
    <message>
        <source>remap failed (no spare rows), rows: {correctable} correctable, {uncorrectable} uncorrectable</source>
        <translation>行重映射失败（无备用行），行：可纠正 {correctable}，不可纠正 {uncorrectable}</translation>
    </message>
    <message>
        <source>remap pending (reset needed), rows: {correctable} correctable, {uncorrectable} uncorrectable</source>
        <translation>行重映射待生效（需重置），行：可纠正 {correctable}，不可纠正 {uncorrectable}</translation>
    </message>
    <message>
        <source>Gen{gen} x{width}, max Gen{max_gen} x{max_width} ({ratio} of the bandwidth)</source>
        <translation>Gen{gen} x{width}，最高 Gen{max_gen} x{max_width}（带宽的 {ratio}）</translation>
    </message>
    <message>
        <source>Gen{gen} x{width}, max Gen{max_gen} x{max_width}</source>
        <translation>Gen{gen} x{width}，最高 Gen{max_gen} x{max_width}</translation>
    </message>
    <message>
        <source>{rate} replays/min, limit {limit}/min (total {total})</source>
        <translation>PCIe 重传 {rate} 次/分钟，上限 {limit} 次/分钟（共 {total}）</translation>
    </message>
    <message>
        <source>power brake {minutes} min in {window} min, {temp} (slowdown {slowdown})</source>
        <translation>{window} 分钟内功耗制动 {minutes} 分钟，{temp}（降频温度 {slowdown}）</translation>
    </message>
    <message>
        <source>power brake {minutes} min in {window} min</source>
        <translation>{window} 分钟内功耗制动 {minutes} 分钟</translation>
    </message>
    <message>
        <source>{min} to {max} at ≥{util} % load, {minutes} min</source>
        <translation>负载 ≥{util} % 时 {min} 至 {max}，{minutes} 分钟</translation>
    </message>
    <message>
        <source>SM clock {value} under load, limit {limit} (nominal boost {nominal} MHz, user spec)</source>
        <translation>负载下 SM 频率 {value}，下限 {limit}（标称加速频率 {nominal} MHz，用户规格）</translation>
    </message>
    <message>
        <source>SM clock {value} under load, limit {limit} (nominal boost {nominal} MHz)</source>
        <translation>负载下 SM 频率 {value}，下限 {limit}（标称加速频率 {nominal} MHz）</translation>
    </message>
    <message>
        <source>SM clock {value} under load, limit {limit}</source>
        <translation>负载下 SM 频率 {value}，下限 {limit}</translation>
    </message>
    <message>
        <source>{evidence}, {explained_by}</source>
        <translation>{evidence}，{explained_by}</translation>
    </message>
    <message>
        <source>lost {minutes} min ({lost} lost, {back} back)</source>
        <translation>掉卡 {minutes} 分钟（掉卡 {lost} 次，恢复 {back} 次）</translation>
    </message>
    <message>
        <source>unreachable {minutes} min, {polls} failed polls: {error}</source>
        <translation>不可达 {minutes} 分钟，采集失败 {polls} 次：{error}</translation>
    </message>
    <message>
        <source>unreachable {minutes} min, {polls} failed polls</source>
        <translation>不可达 {minutes} 分钟，采集失败 {polls} 次</translation>
    </message>
    <message>
        <source>(no majority)</source>
        <translation>（无多数版本）</translation>
    </message>
    <message>
        <source>CUDA driver {version}, expected {expected} ({basis})</source>
        <translation>CUDA 驱动 {version}，应为 {expected}（{basis}）</translation>
    </message>
    <message>
        <source>driver {version}, expected {expected} ({basis})</source>
        <translation>驱动 {version}，应为 {expected}（{basis}）</translation>
    </message>
    <message>
        <source>VBIOS {vbios}, expected {expected}</source>
        <translation>VBIOS {vbios}，应为 {expected}</translation>
    </message>
</context>
<context>
    <name>EvidenceExport</name>
    <message>
        <source>Export &amp;evidence…</source>
        <translation>导出证据(&amp;E)…</translation>
    </message>
    <message>
        <source>Write the card&apos;s RMA / return evidence: history, Xids, pages, findings and plots (zip)</source>
        <translation>写出该卡的 RMA / 退货证据：历史、Xid、退役页、问题和曲线图（zip）</translation>
    </message>
    <message>
        <source>a card only (not a node)</source>
        <translation>仅限单卡（不是节点）</translation>
    </message>
    <message>
        <source>an export is running</source>
        <translation>正在导出</translation>
    </message>
    <message>
        <source>Export evidence</source>
        <translation>导出证据</translation>
    </message>
    <message>
        <source>Zip archive (*.zip)</source>
        <translation>Zip 压缩包 (*.zip)</translation>
    </message>
    <message>
        <source>Export evidence failed</source>
        <translation>导出证据失败</translation>
    </message>
    <message>
        <source>cannot export evidence to {path}: {error}</source>
        <translation>无法将证据导出到 {path}：{error}</translation>
    </message>
    <message>
        <source>exporting evidence for {gpu} to {file}…</source>
        <translation>正在将 {gpu} 的证据导出到 {file}…</translation>
    </message>
    <message>
        <source>evidence written to {path} ({size} KiB)</source>
        <translation>证据已写入 {path}（{size} KiB）</translation>
    </message>
</context>
<context>
    <name>EvidencePlots</name>
    <message>
        <source>no data (not supported or not recorded)</source>
        <translation>无数据（不支持或未记录）</translation>
    </message>
</context>
<context>
    <name>ExceptionDialog</name>
    <message>
        <source>fleetmon: unexpected error</source>
        <translation>fleetmon：意外错误</translation>
    </message>
    <message>
        <source>Copy traceback</source>
        <translation>复制错误堆栈</translation>
    </message>
    <message>
        <source>Something went wrong inside fleetmon. The window keeps running; please report this with the traceback below.</source>
        <translation>fleetmon 内部出错。窗口会继续运行；请将下面的错误堆栈一并报告给我们。</translation>
    </message>
</context>
<context>
    <name>FindingsTable</name>
    <message>
        <source>node</source>
        <translation>节点</translation>
    </message>
    <message>
        <source>snoozed until {time}</source>
        <translation>暂缓至 {time}</translation>
    </message>
    <message>
        <source>acknowledged</source>
        <translation>已确认</translation>
    </message>
    <message>
        <source>action: {action}</source>
        <translation>处理建议：{action}</translation>
    </message>
    <message>
        <source>{kind} on {node} {gpu}</source>
        <translation>{kind}：{node} {gpu}</translation>
    </message>
</context>
<context>
    <name>FindingsView</name>
    <message>
        <source>{node} GPU {index}</source>
        <translation>{node} GPU {index}</translation>
    </message>
    <message>
        <source>&lt;b&gt;{severity} {kind}&lt;/b&gt; on {where}</source>
        <translation>&lt;b&gt;{severity} {kind}&lt;/b&gt;，位于 {where}</translation>
    </message>
    <message>
        <source>All severities</source>
        <translation>全部级别</translation>
    </message>
    <message>
        <source>Critical</source>
        <translation>严重</translation>
    </message>
    <message>
        <source>Warning and worse</source>
        <translation>警告及以上</translation>
    </message>
    <message>
        <source>Info</source>
        <translation>提示</translation>
    </message>
    <message>
        <source>Show acknowledged</source>
        <translation>显示已确认</translation>
    </message>
    <message>
        <source>Acknowledge…</source>
        <translation>确认…</translation>
    </message>
    <message>
        <source>Snooze…</source>
        <translation>暂缓…</translation>
    </message>
    <message>
        <source>Clear ack</source>
        <translation>取消确认</translation>
    </message>
    <message>
        <source>Clear the acknowledgement or snooze of the selected finding</source>
        <translation>取消所选问题的确认或暂缓</translation>
    </message>
    <message>
        <source>Resolve…</source>
        <translation>处理完成…</translation>
    </message>
    <message>
        <source>Resolve as an operator&apos;s act: card replaced, reseated, driver updated …</source>
        <translation>记录运维处置：换卡、重新插拔、升级驱动 …</translation>
    </message>
    <message>
        <source>All kinds</source>
        <translation>全部类型</translation>
    </message>
    <message>
        <source>All groups</source>
        <translation>全部分组</translation>
    </message>
    <message>
        <source>(no group)</source>
        <translation>（无分组）</translation>
    </message>
    <message>
        <source>{shown} of {total} shown</source>
        <translation>显示 {shown} / {total}</translation>
    </message>
    <message>
        <source> · {count} acknowledged</source>
        <translation> · {count} 已确认</translation>
    </message>
    <message>
        <source> · nodes not heard from: {silent}</source>
        <translation> · 失联节点：{silent}</translation>
    </message>
</context>
<context>
    <name>FleetSummary</name>
    <message>
        <source>, </source>
        <translation>，</translation>
    </message>
    <message>
        <source>&lt;b&gt;1&lt;/b&gt; node ({verdicts})</source>
        <translation>&lt;b&gt;1&lt;/b&gt; 个节点（{verdicts}）</translation>
    </message>
    <message>
        <source>&lt;b&gt;{count}&lt;/b&gt; nodes ({verdicts})</source>
        <translation>&lt;b&gt;{count}&lt;/b&gt; 个节点（{verdicts}）</translation>
    </message>
    <message>
        <source>&lt;b&gt;1&lt;/b&gt; GPU</source>
        <translation>&lt;b&gt;1&lt;/b&gt; 块 GPU</translation>
    </message>
    <message>
        <source>&lt;b&gt;{count}&lt;/b&gt; GPUs</source>
        <translation>&lt;b&gt;{count}&lt;/b&gt; 块 GPU</translation>
    </message>
    <message>
        <source>open findings: {critical} critical, {warning} warning</source>
        <translation>未关闭问题：{critical} 严重，{warning} 警告</translation>
    </message>
    <message>
        <source>{count} acknowledged</source>
        <translation>{count} 已确认</translation>
    </message>
    <message>
        <source>drivers: {drivers}</source>
        <translation>驱动：{drivers}</translation>
    </message>
    <message>
        <source>{version} ({count})</source>
        <translation>{version}（{count}）</translation>
    </message>
</context>
<context>
    <name>FleetTable</name>
    <message>
        <source>intake {verdict} at {time} on {node} (the card&apos;s Changes tab has the reasons)</source>
        <translation>验收 {verdict}，{time}，在 {node}（原因见该卡的“变更记录”页）</translation>
    </message>
    <message>
        <source>intake {verdict} at {time} (the card&apos;s Changes tab has the reasons)</source>
        <translation>验收 {verdict}，{time}（原因见该卡的“变更记录”页）</translation>
    </message>
</context>
<context>
    <name>FleetTree</name>
    <message>
        <source>(no group)</source>
        <translation>（无分组）</translation>
    </message>
    <message>
        <source>1 node · {gpus}</source>
        <translation>1 个节点 · {gpus}</translation>
    </message>
    <message>
        <source>{count} nodes · {gpus}</source>
        <translation>{count} 个节点 · {gpus}</translation>
    </message>
    <message>
        <source>max {value}</source>
        <translation>最高 {value}</translation>
    </message>
    <message>
        <source>{verdict} · {same}/1 GPU</source>
        <translation>{verdict} · {same}/1 块 GPU</translation>
    </message>
    <message>
        <source>{verdict} · {same}/{total} GPUs</source>
        <translation>{verdict} · {same}/{total} 块 GPU</translation>
    </message>
    <message>
        <source>slowdown temperature {value} °C</source>
        <translation>降频温度 {value} °C</translation>
    </message>
    <message>
        <source>verdict: {verdict}</source>
        <translation>结论：{verdict}</translation>
    </message>
    <message>
        <source>intake: {verdict} ({date})</source>
        <translation>验收：{verdict}（{date}）</translation>
    </message>
    <message>
        <source>{vendor} · driver {driver}, {runtime_name} {runtime}, firmware {firmware}</source>
        <translation>{vendor} · 驱动 {driver}，{runtime_name} {runtime}，固件 {firmware}</translation>
    </message>
    <message>
        <source>{vendor} · driver {driver}, {runtime_name} {runtime}</source>
        <translation>{vendor} · 驱动 {driver}，{runtime_name} {runtime}</translation>
    </message>
    <message>
        <source>last poll {age}</source>
        <translation>上次采集 {age}</translation>
    </message>
    <message>
        <source>last error: {error}</source>
        <translation>最近错误：{error}</translation>
    </message>
    <message>
        <source>group {name}: {nodes}, {gpus}</source>
        <translation>分组 {name}：{nodes}，{gpus}</translation>
    </message>
    <message>
        <source>1 node</source>
        <translation>1 个节点</translation>
    </message>
    <message>
        <source>{count} nodes</source>
        <translation>{count} 个节点</translation>
    </message>
    <message>
        <source>1 GPU</source>
        <translation>1 块 GPU</translation>
    </message>
    <message>
        <source>{count} GPUs</source>
        <translation>{count} 块 GPU</translation>
    </message>
</context>
<context>
    <name>FleetView</name>
    <message>
        <source>Filter: node, gpu[01-16] hostlist, model:A100, vendor:amd, driver:535, status:critical…</source>
        <translation>筛选：节点、gpu[01-16] 主机列表、model:A100、vendor:amd、driver:535、status:critical…</translation>
    </message>
    <message>
        <source>Group by group</source>
        <translation>按分组显示</translation>
    </message>
    <message>
        <source>reading database…</source>
        <translation>正在读取数据库…</translation>
    </message>
    <message>
        <source>Nodes are counted by their verdict (fail, warn, pass …, as the report judges them), one verdict per node.
Open findings are counted one by one: a node with three warnings is one warn node and three warning findings.</source>
        <translation>节点按结论计数（不通过、警告、通过 …，与报告的判定一致），每个节点一个结论。
未关闭问题逐个计数：一个有三个警告的节点算一个警告节点、三个警告问题。</translation>
    </message>
    <message>
        <source>Intake… (check {node} GPU {index})</source>
        <translation>验收…（检查 {node} GPU {index}）</translation>
    </message>
    <message>
        <source>Check this card against its spec and its model&apos;s fleet (PASS / CONDITIONAL / REJECT)</source>
        <translation>对照规格和同型号卡检查这张卡（PASS / CONDITIONAL / REJECT）</translation>
    </message>
    <message>
        <source>Intake… (cards of {node} new in the last 24 h)</source>
        <translation>验收…（{node} 上 24 小时内新上架的卡）</translation>
    </message>
    <message>
        <source>Check the node&apos;s cards first seen in the last 24 h against their spec and fleet</source>
        <translation>对照规格和同型号卡检查该节点 24 小时内首次出现的卡</translation>
    </message>
</context>
<context>
    <name>Format</name>
    <message>
        <source>{n} s ago</source>
        <translation>{n} 秒前</translation>
    </message>
    <message>
        <source>{n} min ago</source>
        <translation>{n} 分钟前</translation>
    </message>
    <message>
        <source>{n} h ago</source>
        <translation>{n} 小时前</translation>
    </message>
    <message>
        <source>{n} d ago</source>
        <translation>{n} 天前</translation>
    </message>
    <message>
        <source>{n} s</source>
        <translation>{n} 秒</translation>
    </message>
    <message>
        <source>{n} min</source>
        <translation>{n} 分钟</translation>
    </message>
    <message>
        <source>{n} h</source>
        <translation>{n} 小时</translation>
    </message>
    <message>
        <source>{n} d</source>
        <translation>{n} 天</translation>
    </message>
    <message>
        <source>{verdict}: {kind} (+{more})</source>
        <translation>{verdict}：{kind}（+{more}）</translation>
    </message>
    <message>
        <source>{verdict}: {kind}</source>
        <translation>{verdict}：{kind}</translation>
    </message>
    <message>
        <source>{verdict} {age}</source>
        <translation>{verdict} {age}</translation>
    </message>
    <message>
        <source>{label} (+{count})</source>
        <translation>{label}（+{count}）</translation>
    </message>
</context>
<context>
    <name>GoNoGoModel</name>
    <message>
        <source>{gpus} of {expected}</source>
        <translation>{gpus} / {expected}</translation>
    </message>
    <message>
        <source>go; {warnings}</source>
        <translation>可用；{warnings}</translation>
    </message>
    <message>
        <source>go: nothing in the window</source>
        <translation>可用：时间窗口内没有问题</translation>
    </message>
    <message>
        <source>no-go: {reason}</source>
        <translation>不可用：{reason}</translation>
    </message>
    <message>
        <source>warning: {warning}</source>
        <translation>警告：{warning}</translation>
    </message>
</context>
<context>
    <name>GpuDetail</name>
    <message>
        <source>not in the spec catalog (add a [[spec]] to the fleet file)</source>
        <translation>不在规格目录中（可在集群文件中添加 [[spec]]）</translation>
    </message>
    <message>
        <source>{origin} · boost {boost} MHz · TDP {tdp} W · {memory} · PCIe {pcie}</source>
        <translation>{origin} · 加速频率 {boost} MHz · TDP {tdp} W · {memory} · PCIe {pcie}</translation>
    </message>
    <message>
        <source>not reported by {tool}</source>
        <translation>{tool} 未上报</translation>
    </message>
    <message>
        <source>{node} · index {index} · {bus}</source>
        <translation>{node} · 序号 {index} · {bus}</translation>
    </message>
    <message>
        <source>card {id}</source>
        <translation>卡 {id}</translation>
    </message>
</context>
<context>
    <name>GpuDetailView</name>
    <message>
        <source>Select a GPU in the fleet table to see its inventory and history.</source>
        <translation>在集群表中选择一块 GPU，查看其资产清单和历史。</translation>
    </message>
    <message>
        <source>Intake…</source>
        <translation>验收…</translation>
    </message>
    <message>
        <source>Check this card against its spec and its model&apos;s fleet (PASS / CONDITIONAL / REJECT), store the result with the card and offer its certificate</source>
        <translation>对照规格和同型号卡检查这张卡（PASS / CONDITIONAL / REJECT），结果随卡保存并可出具验收证书</translation>
    </message>
    <message>
        <source>Custom…</source>
        <translation>自定义…</translation>
    </message>
    <message>
        <source>select a GPU to see its inventory</source>
        <translation>选择一块 GPU 查看其资产清单</translation>
    </message>
    <message>
        <source>Inventory</source>
        <translation>资产清单</translation>
    </message>
    <message>
        <source>Changes</source>
        <translation>变更记录</translation>
    </message>
    <message>
        <source>Select a GPU in the fleet table to see its history.</source>
        <translation>在集群表中选择一块 GPU 查看其历史。</translation>
    </message>
    <message>
        <source>reading the history…</source>
        <translation>正在读取历史…</translation>
    </message>
    <message>
        <source>not in the spec catalog</source>
        <translation>不在规格目录中</translation>
    </message>
    <message>
        <source>user spec: boost {boost} MHz, TDP {tdp} W, {memory} GB</source>
        <translation>用户规格：加速频率 {boost} MHz，TDP {tdp} W，{memory} GB</translation>
    </message>
    <message>
        <source>nominal: boost {boost} MHz, TDP {tdp} W, {memory} GB</source>
        <translation>标称：加速频率 {boost} MHz，TDP {tdp} W，{memory} GB</translation>
    </message>
    <message>
        <source>&lt;b&gt;{node} GPU {index}&lt;/b&gt; — {model} · {nominal}</source>
        <translation>&lt;b&gt;{node} GPU {index}&lt;/b&gt; — {model} · {nominal}</translation>
    </message>
    <message>
        <source>{node} GPU {index} — {model} · {uuid} · {nominal}</source>
        <translation>{node} GPU {index} — {model} · {uuid} · {nominal}</translation>
    </message>
    <message>
        <source>reading…</source>
        <translation>读取中…</translation>
    </message>
    <message>
        <source>cannot read the history: {message}</source>
        <translation>无法读取历史：{message}</translation>
    </message>
    <message>
        <source>cannot read the history</source>
        <translation>无法读取历史</translation>
    </message>
    <message>
        <source>{points} points · {resolution} resolution · read {ms} ms</source>
        <translation>{points} 个数据点 · {resolution}粒度 · 读取 {ms} ms</translation>
    </message>
    <message>
        <source>slowdown {value} °C</source>
        <translation>降频温度 {value} °C</translation>
    </message>
    <message>
        <source>nominal TDP {value} W</source>
        <translation>标称 TDP {value} W</translation>
    </message>
    <message>
        <source>nominal boost {value} MHz</source>
        <translation>标称加速频率 {value} MHz</translation>
    </message>
    <message>
        <source>no changes recorded</source>
        <translation>没有变更记录</translation>
    </message>
    <message>
        <source>Changes ({count})</source>
        <translation>变更记录（{count}）</translation>
    </message>
</context>
<context>
    <name>HistoryPlots</name>
    <message>
        <source>Temperature</source>
        <translation>温度</translation>
    </message>
    <message>
        <source>mean</source>
        <translation>平均</translation>
    </message>
    <message>
        <source>Power</source>
        <translation>功耗</translation>
    </message>
    <message>
        <source>enforced limit</source>
        <translation>生效功耗上限</translation>
    </message>
    <message>
        <source>SM clock</source>
        <translation>SM 频率</translation>
    </message>
    <message>
        <source>ECC errors, retired pages, remapped rows</source>
        <translation>ECC 错误、退役页、行重映射</translation>
    </message>
    <message>
        <source>ECC corrected</source>
        <translation>ECC 可纠正</translation>
    </message>
    <message>
        <source>ECC uncorrected</source>
        <translation>ECC 不可纠正</translation>
    </message>
    <message>
        <source>retired pages</source>
        <translation>退役页</translation>
    </message>
    <message>
        <source>remapped rows</source>
        <translation>重映射行</translation>
    </message>
    <message>
        <source>PCIe link while busy: generation (left axis), width (right axis)</source>
        <translation>负载时 PCIe 链路：代数（左轴），宽度（右轴）</translation>
    </message>
    <message>
        <source>generation</source>
        <translation>代数</translation>
    </message>
    <message>
        <source>width</source>
        <translation>宽度</translation>
    </message>
    <message>
        <source>PCIe replays</source>
        <translation>PCIe 重传</translation>
    </message>
    <message>
        <source>replays</source>
        <translation>重传</translation>
    </message>
    <message>
        <source>power brake</source>
        <translation>功耗制动</translation>
    </message>
    <message>
        <source>power dropout</source>
        <translation>功耗读数中断</translation>
    </message>
    <message>
        <source>thermal</source>
        <translation>过热降频</translation>
    </message>
    <message>
        <source>PCIe downtrained</source>
        <translation>PCIe 链路降级</translation>
    </message>
    <message>
        <source>no data</source>
        <translation>无数据</translation>
    </message>
    <message>
        <source>node unreachable</source>
        <translation>节点不可达</translation>
    </message>
    <message>
        <source>count</source>
        <translation>次数</translation>
    </message>
    <message>
        <source>not reported by {tool}</source>
        <translation>{tool} 未上报</translation>
    </message>
    <message>
        <source>not supported on this GPU</source>
        <translation>此 GPU 不支持</translation>
    </message>
    <message>
        <source>no data in this window</source>
        <translation>该时间窗口内无数据</translation>
    </message>
    <message>
        <source>Move the mouse over a plot to read its values · wheel scrolls · Ctrl+wheel or right-drag zooms time, drag pans · double-click resets</source>
        <translation>鼠标移到图上读取数值 · 滚轮滚动 · Ctrl+滚轮或右键拖动缩放时间 · 拖动平移 · 双击复位</translation>
    </message>
    <message>
        <source>Reset zoom</source>
        <translation>复位缩放</translation>
    </message>
    <message>
        <source>Show the whole range again (or double-click a plot)</source>
        <translation>重新显示整个范围（或双击图表）</translation>
    </message>
    <message>
        <source>&lt;b&gt;Throttle reasons, episodes and Xid events&lt;/b&gt;</source>
        <translation>&lt;b&gt;降频原因、异常时段与 Xid 事件&lt;/b&gt;</translation>
    </message>
    <message>
        <source>min–max</source>
        <translation>最小–最大</translation>
    </message>
    <message>
        <source>throttle reasons and Xid events: not reported by {tool}</source>
        <translation>降频原因与 Xid 事件：{tool} 未上报</translation>
    </message>
    <message>
        <source>no throttling, no episode and no Xid in this window</source>
        <translation>该时间窗口内无降频、无异常时段、无 Xid</translation>
    </message>
    <message>
        <source>{name} {value}{unit}</source>
        <translation>{name} {value}{unit}</translation>
    </message>
    <message>
        <source>throttle {reasons}</source>
        <translation>降频 {reasons}</translation>
    </message>
</context>
<context>
    <name>InspectionView</name>
    <message>
        <source>Run inspection</source>
        <translation>执行巡检</translation>
    </message>
    <message>
        <source>Judge the window back to the last sign-off (at least 24 h) again</source>
        <translation>重新判定自上次签字确认以来（至少 24 小时）的情况</translation>
    </message>
    <message>
        <source>Print…</source>
        <translation>打印…</translation>
    </message>
    <message>
        <source>Save HTML…</source>
        <translation>保存 HTML…</translation>
    </message>
    <message>
        <source>Not run yet</source>
        <translation>尚未执行</translation>
    </message>
    <message>
        <source>The fleet&apos;s status, then its nodes counted by verdict (one per node); the checklist below lists each node&apos;s open findings.</source>
        <translation>集群状态，以及按结论统计的节点数（每个节点一个结论）；下方检查单列出每个节点的未关闭问题。</translation>
    </message>
    <message>
        <source>Tick all</source>
        <translation>全部勾选</translation>
    </message>
    <message>
        <source>What changed since the last sign-off</source>
        <translation>自上次签字确认以来的变化</translation>
    </message>
    <message>
        <source>your name</source>
        <translation>你的姓名</translation>
    </message>
    <message>
        <source>note (optional): what you did, what to watch</source>
        <translation>备注（可选）：做了什么、需关注什么</translation>
    </message>
    <message>
        <source>Sign off</source>
        <translation>签字确认</translation>
    </message>
    <message>
        <source>Checklist: tick each node as you review it</source>
        <translation>检查单：逐个节点核查后勾选</translation>
    </message>
    <message>
        <source>Checklist</source>
        <translation>检查单</translation>
    </message>
    <message>
        <source>Report (printable)</source>
        <translation>巡检报告（可打印）</translation>
    </message>
    <message>
        <source>Sign off as</source>
        <translation>签字人</translation>
    </message>
    <message>
        <source>Running the inspection…</source>
        <translation>正在巡检…</translation>
    </message>
    <message>
        <source>{status} · {nodes} ({verdicts}) · window {since} .. {until} UTC</source>
        <translation>{status} · {nodes}（{verdicts}）· 时间窗口 {since} .. {until} UTC</translation>
    </message>
    <message>
        <source>1 node</source>
        <translation>1 个节点</translation>
    </message>
    <message>
        <source>{count} nodes</source>
        <translation>{count} 个节点</translation>
    </message>
    <message>
        <source>, </source>
        <translation>，</translation>
    </message>
    <message>
        <source>none</source>
        <translation>无</translation>
    </message>
    <message>
        <source>No sign-off yet: every open finding counts as new. Sign off below to set the baseline for the next inspection.</source>
        <translation>尚无签字确认：所有未关闭问题都算作新增。在下方签字确认，作为下次巡检的基线。</translation>
    </message>
    <message>
        <source>What changed: no sign-off to compare with ({count} rows)</source>
        <translation>变化：没有可对比的签字确认（{count} 行）</translation>
    </message>
    <message>
        <source>Compared with the sign-off by {name} at {time} UTC{note}.</source>
        <translation>对比 {name} 于 {time} UTC 的签字确认{note}。</translation>
    </message>
    <message>
        <source>Since the sign-off by {name} at {time} UTC: {new} new, {worsened} worsened, {resolved} resolved, {inventory} inventory changes</source>
        <translation>自 {name} 于 {time} UTC 签字确认以来：新增 {new}，加重 {worsened}，已恢复 {resolved}，资产变更 {inventory}</translation>
    </message>
    <message>
        <source> · no nodes in the database yet</source>
        <translation> · 数据库中还没有节点</translation>
    </message>
    <message>
        <source>&lt;b style=&apos;color:#c62828&apos;&gt;The inspection failed:&lt;/b&gt; {message}</source>
        <translation>&lt;b style=&apos;color:#c62828&apos;&gt;巡检失败：&lt;/b&gt;{message}</translation>
    </message>
    <message>
        <source>Print the inspection</source>
        <translation>打印巡检报告</translation>
    </message>
    <message>
        <source>Save the inspection as HTML</source>
        <translation>将巡检报告保存为 HTML</translation>
    </message>
</context>
<context>
    <name>IntakeAction</name>
    <message>
        <source>Intake</source>
        <translation>验收</translation>
    </message>
    <message>
        <source>The intake could not be made: {error}</source>
        <translation>无法完成验收：{error}</translation>
    </message>
</context>
<context>
    <name>IntakeDialog</name>
    <message>
        <source>Intake — {node}</source>
        <translation>验收 — {node}</translation>
    </message>
    <message>
        <source>Intake — {node} GPU {gpu}</source>
        <translation>验收 — {node} GPU {gpu}</translation>
    </message>
    <message>
        <source>Save certificate…</source>
        <translation>保存验收证书…</translation>
    </message>
    <message>
        <source>No card was checked.</source>
        <translation>没有检查任何卡。</translation>
    </message>
    <message>
        <source>stored with the card</source>
        <translation>已随卡保存</translation>
    </message>
    <message>
        <source>not stored: {error}</source>
        <translation>未保存：{error}</translation>
    </message>
    <message>
        <source>not stored (the database is read-only)</source>
        <translation>未保存（数据库为只读）</translation>
    </message>
    <message>
        <source>1 card checked: {counts} · {stored}</source>
        <translation>已检查 1 张卡：{counts} · {stored}</translation>
    </message>
    <message>
        <source>{count} cards checked: {counts} · {stored}</source>
        <translation>已检查 {count} 张卡：{counts} · {stored}</translation>
    </message>
    <message>
        <source>Save intake certificate</source>
        <translation>保存验收证书</translation>
    </message>
</context>
<context>
    <name>Inventory</name>
    <message>
        <source>Model</source>
        <translation>型号</translation>
    </message>
    <message>
        <source>Vendor</source>
        <translation>厂商</translation>
    </message>
    <message>
        <source>Where</source>
        <translation>位置</translation>
    </message>
    <message>
        <source>Card</source>
        <translation>板卡</translation>
    </message>
    <message>
        <source>Serial</source>
        <translation>序列号</translation>
    </message>
    <message>
        <source>UUID</source>
        <translation>UUID</translation>
    </message>
    <message>
        <source>VBIOS</source>
        <translation>VBIOS</translation>
    </message>
    <message>
        <source>Firmware</source>
        <translation>固件</translation>
    </message>
    <message>
        <source>Board part number</source>
        <translation>板卡料号</translation>
    </message>
    <message>
        <source>Driver</source>
        <translation>驱动</translation>
    </message>
    <message>
        <source>PCIe max</source>
        <translation>PCIe 最高</translation>
    </message>
    <message>
        <source>Power min / default / max</source>
        <translation>功耗 最小 / 默认 / 最大</translation>
    </message>
    <message>
        <source>Power enforced</source>
        <translation>实际功耗上限</translation>
    </message>
    <message>
        <source>Slowdown / shutdown</source>
        <translation>降频 / 关机温度</translation>
    </message>
    <message>
        <source>Memory</source>
        <translation>显存</translation>
    </message>
    <message>
        <source>Nominal spec</source>
        <translation>标称规格</translation>
    </message>
    <message>
        <source>Spec source</source>
        <translation>规格来源</translation>
    </message>
    <message>
        <source>First seen</source>
        <translation>首次出现</translation>
    </message>
    <message>
        <source>State</source>
        <translation>状态</translation>
    </message>
</context>
<context>
    <name>InventoryExport</name>
    <message>
        <source>&amp;Export inventory…</source>
        <translation>导出资产清单(&amp;E)…</translation>
    </message>
    <message>
        <source>Write the inventory sheet (XLSX, CSV or JSON)</source>
        <translation>写出资产清单表（XLSX、CSV 或 JSON）</translation>
    </message>
    <message>
        <source>Excel workbook (*.xlsx)</source>
        <translation>Excel 工作簿 (*.xlsx)</translation>
    </message>
    <message>
        <source>Export inventory</source>
        <translation>导出资产清单</translation>
    </message>
    <message>
        <source>Export failed</source>
        <translation>导出失败</translation>
    </message>
    <message>
        <source>cannot export to {path}: {error}</source>
        <translation>无法导出到 {path}：{error}</translation>
    </message>
    <message>
        <source>Exporting inventory to {file}…</source>
        <translation>正在将资产清单导出到 {file}…</translation>
    </message>
    <message>
        <source>Cancel</source>
        <translation>取消</translation>
    </message>
    <message>
        <source>{done} of {total} rows written</source>
        <translation>已写入 {done} / {total} 行</translation>
    </message>
    <message>
        <source>exported {count} GPUs to {path}</source>
        <translation>已将 {count} 块 GPU 导出到 {path}</translation>
    </message>
</context>
<context>
    <name>InventoryPrint</name>
    <message>
        <source>&amp;Print inventory…</source>
        <translation>打印资产清单(&amp;P)…</translation>
    </message>
    <message>
        <source>Print the inventory sheet, or save it as PDF (landscape, by section)</source>
        <translation>打印资产清单表，或保存为 PDF（横向，按分组）</translation>
    </message>
    <message>
        <source>cannot print to {printer}</source>
        <translation>无法打印到 {printer}</translation>
    </message>
    <message>
        <source>1 GPU</source>
        <translation>1 块 GPU</translation>
    </message>
    <message>
        <source>{count} GPUs</source>
        <translation>{count} 块 GPU</translation>
    </message>
    <message>
        <source>GPU inventory — {fleet}</source>
        <translation>GPU 资产清单 — {fleet}</translation>
    </message>
    <message>
        <source>page {page} of {pages}</source>
        <translation>第 {page} 页，共 {pages} 页</translation>
    </message>
    <message>
        <source>Print the inventory</source>
        <translation>打印资产清单</translation>
    </message>
    <message>
        <source>Print inventory</source>
        <translation>打印资产清单</translation>
    </message>
    <message>
        <source>GPU inventory {date}</source>
        <translation>GPU 资产清单 {date}</translation>
    </message>
    <message>
        <source>Printing the inventory…</source>
        <translation>正在打印资产清单…</translation>
    </message>
    <message>
        <source>Cancel</source>
        <translation>取消</translation>
    </message>
    <message>
        <source>Cannot print the inventory: {error}</source>
        <translation>无法打印资产清单：{error}</translation>
    </message>
</context>
<context>
    <name>MainWindow</name>
    <message>
        <source>&amp;File</source>
        <translation>文件(&amp;F)</translation>
    </message>
    <message>
        <source>&amp;View</source>
        <translation>视图(&amp;V)</translation>
    </message>
    <message>
        <source>Fleet</source>
        <translation>集群</translation>
    </message>
    <message>
        <source>Findings</source>
        <translation>问题</translation>
    </message>
    <message>
        <source>Versions</source>
        <translation>版本</translation>
    </message>
    <message>
        <source>Filter: node, gpu[01-16] hostlist, model:A100, vendor:amd, driver:535, status:critical…</source>
        <translation>筛选：节点、gpu[01-16] 主机列表、model:A100、vendor:amd、driver:535、status:critical…</translation>
    </message>
    <message>
        <source>All GPUs</source>
        <translation>全部 GPU</translation>
    </message>
    <message>
        <source>Derating</source>
        <translation>降额</translation>
    </message>
    <message>
        <source>Inspection</source>
        <translation>巡检</translation>
    </message>
    <message>
        <source>Pre-run</source>
        <translation>训练前检查</translation>
    </message>
    <message>
        <source>reading database…</source>
        <translation>正在读取数据库…</translation>
    </message>
    <message>
        <source>&amp;Quit</source>
        <translation>退出(&amp;Q)</translation>
    </message>
    <message>
        <source>&amp;Refresh</source>
        <translation>刷新(&amp;R)</translation>
    </message>
    <message>
        <source>&amp;Find…</source>
        <translation>查找(&amp;F)…</translation>
    </message>
    <message>
        <source>&amp;Collector</source>
        <translation>采集(&amp;C)</translation>
    </message>
    <message>
        <source>&amp;Poll now</source>
        <translation>立即采集(&amp;P)</translation>
    </message>
    <message>
        <source>Pa&amp;use collecting</source>
        <translation>暂停采集(&amp;U)</translation>
    </message>
    <message>
        <source>this window does not collect (no --fleet, or another collector writes)</source>
        <translation>本窗口不采集（未指定 --fleet，或另有采集进程在写入）</translation>
    </message>
    <message>
        <source>&amp;Language</source>
        <translation>语言(&amp;L)</translation>
    </message>
    <message>
        <source>language: {name}</source>
        <translation>语言：{name}</translation>
    </message>
    <message>
        <source>language: {name}, from the next start of fleetmon</source>
        <translation>语言：{name}，下次启动 fleetmon 时生效</translation>
    </message>
    <message>
        <source>poll requested</source>
        <translation>已请求采集</translation>
    </message>
    <message>
        <source>collector: none</source>
        <translation>采集：无</translation>
    </message>
    <message>
        <source>collector: PAUSED</source>
        <translation>采集：已暂停</translation>
    </message>
    <message>
        <source>, {count} {verdict}</source>
        <translation>，{count} {verdict}</translation>
    </message>
    <message>
        <source>{state} · last poll {age} · nodes: {fail} fail, {unreachable} unreachable{silent} · {critical}</source>
        <translation>{state} · 上次采集 {age} · 节点：{fail} 不通过，{unreachable} 不可达{silent} · {critical}</translation>
    </message>
    <message>
        <source>1 critical finding</source>
        <translation>1 个严重问题</translation>
    </message>
    <message>
        <source>{count} critical findings</source>
        <translation>{count} 个严重问题</translation>
    </message>
    <message>
        <source>, </source>
        <translation>，</translation>
    </message>
    <message>
        <source>{count} {verdict}</source>
        <translation>{count} {verdict}</translation>
    </message>
    <message>
        <source>{gpus} on {nodes} ({silent}) · newest sample {age}</source>
        <translation>{nodes}上共 {gpus}（{silent}）· 最新数据 {age}</translation>
    </message>
    <message>
        <source>1 GPU</source>
        <translation>1 块 GPU</translation>
    </message>
    <message>
        <source>{count} GPUs</source>
        <translation>{count} 块 GPU</translation>
    </message>
    <message>
        <source>1 node</source>
        <translation>1 个节点</translation>
    </message>
    <message>
        <source>{count} nodes</source>
        <translation>{count} 个节点</translation>
    </message>
    <message>
        <source>Findings ({count}, {critical} crit)</source>
        <translation>问题（{count}，{critical} 严重）</translation>
    </message>
    <message>
        <source>GPU {uuid} is not in the fleet any more</source>
        <translation>GPU {uuid} 已不在集群中</translation>
    </message>
    <message>
        <source>intake of {target} running…</source>
        <translation>正在验收 {target}…</translation>
    </message>
    <message>
        <source>intake of {node}: </source>
        <translation>{node} 验收：</translation>
    </message>
    <message>
        <source>cannot read the database: {message}</source>
        <translation>无法读取数据库：{message}</translation>
    </message>
</context>
<context>
    <name>PrerunHistory</name>
    <message>
        <source>Power</source>
        <translation>功耗</translation>
    </message>
    <message>
        <source>Finding</source>
        <translation>问题</translation>
    </message>
    <message>
        <source>corrected (new)</source>
        <translation>可纠正（新增）</translation>
    </message>
    <message>
        <source>uncorrected (new)</source>
        <translation>不可纠正（新增）</translation>
    </message>
    <message>
        <source>retired pages (max per card)</source>
        <translation>退役页（单卡最多）</translation>
    </message>
    <message>
        <source>retirement pending (cards)</source>
        <translation>待退役（卡数）</translation>
    </message>
    <message>
        <source>row remap pending / failed</source>
        <translation>行重映射 待处理 / 失败</translation>
    </message>
    <message>
        <source>cards reporting ECC</source>
        <translation>上报 ECC 的卡数</translation>
    </message>
    <message>
        <source>mean / max</source>
        <translation>平均 / 最大</translation>
    </message>
    <message>
        <source>limit / default (min per card)</source>
        <translation>上限 / 默认（单卡最小）</translation>
    </message>
    <message>
        <source>power-brake minutes</source>
        <translation>功耗制动分钟数</translation>
    </message>
    <message>
        <source>unreadable minutes</source>
        <translation>无法读取的分钟数</translation>
    </message>
    <message>
        <source>capped cards</source>
        <translation>功耗受限的卡数</translation>
    </message>
    <message>
        <source>power</source>
        <translation>功耗</translation>
    </message>
    <message>
        <source>Xid events</source>
        <translation>Xid 事件</translation>
    </message>
    <message>
        <source>no data in this window</source>
        <translation>该时间窗口内无数据</translation>
    </message>
    <message>
        <source>none in this window</source>
        <translation>该时间窗口内没有</translation>
    </message>
    <message>
        <source>{what} (resolved)</source>
        <translation>{what}（已恢复）</translation>
    </message>
    <message>
        <source>{what}: {value}</source>
        <translation>{what}：{value}</translation>
    </message>
</context>
<context>
    <name>PrerunView</name>
    <message>
        <source>Each node&apos;s ECC, retired pages, power and Xid history appears here, side by side, after a review.</source>
        <translation>检查后，这里并排显示每个节点的 ECC、退役页、功耗和 Xid 历史。</translation>
    </message>
    <message>
        <source>Out of date: press Review for the nodes&apos; history with the current input.</source>
        <translation>已过期：按“检查”以当前输入查看节点历史。</translation>
    </message>
    <message>
        <source>{vendor} {go} GO, {no_go} NO-GO</source>
        <translation>{vendor} 可用 {go}，不可用 {no_go}</translation>
    </message>
    <message>
        <source>Slurm hostlist, e.g. gpu[01-16,20],dgx[1-4]</source>
        <translation>Slurm 主机列表，如 gpu[01-16,20],dgx[1-4]</translation>
    </message>
    <message>
        <source>Use fleet selection</source>
        <translation>使用集群视图中的选择</translation>
    </message>
    <message>
        <source>The nodes selected in the fleet view (select rows there, Ctrl/Shift-click)</source>
        <translation>集群视图中选中的节点（在那里选择行，Ctrl/Shift 点击）</translation>
    </message>
    <message>
        <source> days</source>
        <translation> 天</translation>
    </message>
    <message>
        <source>Review</source>
        <translation>检查</translation>
    </message>
    <message>
        <source>Type a hostlist or use the fleet selection, then Review.</source>
        <translation>输入主机列表或使用集群视图中的选择，然后点“检查”。</translation>
    </message>
    <message>
        <source>no-go nodes appear here</source>
        <translation>不可用节点显示在这里</translation>
    </message>
    <message>
        <source>Copy exclude list</source>
        <translation>复制排除列表</translation>
    </message>
    <message>
        <source>The no-go nodes in Slurm hostlist form, for sbatch --exclude</source>
        <translation>不可用节点的 Slurm 主机列表，用于 sbatch --exclude</translation>
    </message>
    <message>
        <source>Drain the no-go nodes</source>
        <translation>下线 (drain) 不可用节点</translation>
    </message>
    <message>
        <source>Drain the no-go nodes in Slurm, each with its reasons (asks first; recorded)</source>
        <translation>在 Slurm 中下线 (drain) 不可用节点，附各自原因（先确认；有记录）</translation>
    </message>
    <message>
        <source>Save as HTML…</source>
        <translation>保存为 HTML…</translation>
    </message>
    <message>
        <source>Nodes</source>
        <translation>节点</translation>
    </message>
    <message>
        <source>Window</source>
        <translation>时间窗口</translation>
    </message>
    <message>
        <source>Exclude:</source>
        <translation>排除：</translation>
    </message>
    <message>
        <source>Not a hostlist: {error}</source>
        <translation>不是主机列表：{error}</translation>
    </message>
    <message>
        <source>Nothing is selected in the fleet view: select nodes or GPUs there first.</source>
        <translation>集群视图中没有选择：请先在那里选择节点或 GPU。</translation>
    </message>
    <message>
        <source>not a hostlist: {error}</source>
        <translation>不是主机列表：{error}</translation>
    </message>
    <message>
        <source>no nodes: type a hostlist or use the fleet selection</source>
        <translation>没有节点：请输入主机列表或使用集群视图中的选择</translation>
    </message>
    <message>
        <source>Reviewing…</source>
        <translation>正在检查…</translation>
    </message>
    <message>
        <source>· {days} days to {time} UTC</source>
        <translation>· {days} 天，截至 {time} UTC</translation>
    </message>
    <message>
        <source>&lt;b style=&apos;color:#c62828&apos;&gt;Review failed:&lt;/b&gt; {message}</source>
        <translation>&lt;b style=&apos;color:#c62828&apos;&gt;检查失败：&lt;/b&gt;{message}</translation>
    </message>
    <message>
        <source>&lt;b style=&apos;color:#ef6c00&apos;&gt;Out of date:&lt;/b&gt; the nodes or the window changed since this review; Review again.</source>
        <translation>&lt;b style=&apos;color:#ef6c00&apos;&gt;已过期：&lt;/b&gt;节点或时间窗口在本次检查后已改变；请重新检查。</translation>
    </message>
    <message>
        <source>Save the pre-run review as HTML</source>
        <translation>将训练前检查保存为 HTML</translation>
    </message>
    <message>
        <source>, … ({count} nodes)</source>
        <translation>，…（共 {count} 个节点）</translation>
    </message>
    <message>
        <source>1 node: {nodes}</source>
        <translation>1 个节点：{nodes}</translation>
    </message>
    <message>
        <source>{count} nodes: {nodes}</source>
        <translation>{count} 个节点：{nodes}</translation>
    </message>
</context>
<context>
    <name>QAbstractFileIconProvider</name>
    <message>
        <source>Folder</source>
        <comment>All other platforms</comment>
        <translation>文件夹</translation>
    </message>
</context>
<context>
    <name>QFileDialog</name>
    <message>
        <source>&amp;Look in:</source>
        <translation>查找范围(&amp;L)：</translation>
    </message>
    <message>
        <source>Files of &amp;type:</source>
        <translation>文件类型(&amp;T)：</translation>
    </message>
</context>
<context>
    <name>QPrintSettingsOutput</name>
    <message>
        <source>Page &amp;Set:</source>
        <translation>页面集(&amp;S)：</translation>
    </message>
</context>
<context>
    <name>Range</name>
    <message>
        <source>24 h</source>
        <translation>24 小时</translation>
    </message>
    <message>
        <source>7 d</source>
        <translation>7 天</translation>
    </message>
    <message>
        <source>30 d</source>
        <translation>30 天</translation>
    </message>
    <message>
        <source>90 d</source>
        <translation>90 天</translation>
    </message>
    <message>
        <source>1 y</source>
        <translation>1 年</translation>
    </message>
</context>
<context>
    <name>Resolution</name>
    <message>
        <source>minute</source>
        <translation>分钟</translation>
    </message>
    <message>
        <source>hour</source>
        <translation>小时</translation>
    </message>
    <message>
        <source>day</source>
        <translation>天</translation>
    </message>
</context>
<context>
    <name>ResolveDialog</name>
    <message>
        <source>Resolve finding</source>
        <translation>关闭问题</translation>
    </message>
    <message>
        <source>what was done (RMA number, part, ticket…)</source>
        <translation>做了什么（RMA 编号、部件、工单…）</translation>
    </message>
    <message>
        <source>Resolved because:</source>
        <translation>处理方式：</translation>
    </message>
    <message>
        <source>Note:</source>
        <translation>备注：</translation>
    </message>
    <message>
        <source>Closes this episode and keeps it in the card&apos;s history; if the fault comes back it reopens as a recurrence.</source>
        <translation>关闭本次问题并保留在该卡的历史中；故障再次出现时作为复发重新打开。</translation>
    </message>
</context>
<context>
    <name>SaveHtml</name>
    <message>
        <source>HTML (*.html *.htm)</source>
        <translation>HTML 网页 (*.html *.htm)</translation>
    </message>
    <message>
        <source>Cannot write {path}: {error}</source>
        <translation>无法写入 {path}：{error}</translation>
    </message>
</context>
<context>
    <name>Severity</name>
    <message>
        <source>critical</source>
        <translation>严重</translation>
    </message>
    <message>
        <source>warning</source>
        <translation>警告</translation>
    </message>
    <message>
        <source>info</source>
        <translation>提示</translation>
    </message>
</context>
<context>
    <name>SlurmAction</name>
    <message>
        <source>Drain {node} in Slurm…</source>
        <translation>在 Slurm 中下线 (drain) {node}…</translation>
    </message>
    <message>
        <source>Take the node out of scheduling (asks first; recorded)</source>
        <translation>让节点退出调度（先确认；有记录）</translation>
    </message>
    <message>
        <source>Resume {node} in Slurm…</source>
        <translation>在 Slurm 中恢复 (resume) {node}…</translation>
    </message>
    <message>
        <source>Return the drained node to service (asks first; recorded)</source>
        <translation>让已下线的节点恢复服务（先确认；有记录）</translation>
    </message>
    <message>
        <source>Drain in Slurm</source>
        <translation>在 Slurm 中下线 (drain)</translation>
    </message>
    <message>
        <source>Resume in Slurm</source>
        <translation>在 Slurm 中恢复 (resume)</translation>
    </message>
    <message>
        <source>Drain</source>
        <translation>下线</translation>
    </message>
    <message>
        <source>Resume</source>
        <translation>恢复</translation>
    </message>
    <message>
        <source>{node} (Slurm {slurm_name})</source>
        <translation>{node}（Slurm 名 {slurm_name}）</translation>
    </message>
    <message>
        <source>drain {target} failed: {error}</source>
        <translation>下线 (drain) {target} 失败：{error}</translation>
    </message>
    <message>
        <source>drain {target}: done — reason: {reason}</source>
        <translation>下线 (drain) {target}：完成 — 原因：{reason}</translation>
    </message>
    <message>
        <source>drain {target}: done</source>
        <translation>下线 (drain) {target}：完成</translation>
    </message>
    <message>
        <source>resume {target} failed: {error}</source>
        <translation>恢复 (resume) {target} 失败：{error}</translation>
    </message>
    <message>
        <source>resume {target}: done — reason: {reason}</source>
        <translation>恢复 (resume) {target}：完成 — 原因：{reason}</translation>
    </message>
    <message>
        <source>resume {target}: done</source>
        <translation>恢复 (resume) {target}：完成</translation>
    </message>
    <message>
        <source>Drain this node in Slurm?</source>
        <translation>在 Slurm 中下线 (drain) 此节点？</translation>
    </message>
    <message>
        <source>Resume this node in Slurm?</source>
        <translation>在 Slurm 中恢复 (resume) 此节点？</translation>
    </message>
    <message>
        <source>Drain {count} nodes in Slurm?</source>
        <translation>在 Slurm 中下线 (drain) 这 {count} 个节点？</translation>
    </message>
    <message>
        <source>Resume {count} nodes in Slurm?</source>
        <translation>在 Slurm 中恢复 (resume) 这 {count} 个节点？</translation>
    </message>
    <message>
        <source>(none: {error})</source>
        <translation>（无：{error}）</translation>
    </message>
    <message>
        <source>Node: {node}    Slurm name: {slurm_name}</source>
        <translation>节点：{node}    Slurm 名：{slurm_name}</translation>
    </message>
    <message>
        <source>Reason: {reason}</source>
        <translation>原因：{reason}</translation>
    </message>
    <message>
        <source>Running jobs finish; no new jobs start on a drained node.</source>
        <translation>正在运行的作业会跑完；已下线的节点不再启动新作业。</translation>
    </message>
    <message>
        <source>The node takes jobs again.</source>
        <translation>节点将重新接收作业。</translation>
    </message>
    <message>
        <source>The request is recorded with your name and shown in the node&apos;s history and the report.</source>
        <translation>此操作会连同您的用户名一起记录，并显示在节点的历史和巡检报告中。</translation>
    </message>
    <message>
        <source>A Slurm request is still running; try again when it is done.</source>
        <translation>一个 Slurm 请求仍在进行；请在它完成后重试。</translation>
    </message>
    <message>
        <source>cannot record it: {error}</source>
        <translation>无法记录：{error}</translation>
    </message>
    <message>
        <source>stopped: {error}</source>
        <translation>已中止：{error}</translation>
    </message>
    <message>
        <source>(recorded as failed)</source>
        <translation>（已记录为失败）</translation>
    </message>
</context>
<context>
    <name>SlurmStates</name>
    <message>
        <source>Slurm unavailable</source>
        <translation>Slurm 不可用</translation>
    </message>
    <message>
        <source>unknown to Slurm</source>
        <translation>Slurm 中无此节点</translation>
    </message>
    <message>
        <source>Slurm: not read yet</source>
        <translation>Slurm：尚未读取</translation>
    </message>
    <message>
        <source>Slurm: {error}</source>
        <translation>Slurm：{error}</translation>
    </message>
    <message>
        <source>Slurm: as sinfo reported it</source>
        <translation>Slurm：sinfo 报告的状态</translation>
    </message>
</context>
<context>
    <name>Status</name>
    <message>
        <source>ok</source>
        <translation>正常</translation>
    </message>
    <message>
        <source>lost</source>
        <translation>掉卡</translation>
    </message>
    <message>
        <source>unreachable</source>
        <translation>不可达</translation>
    </message>
    <message>
        <source>stale</source>
        <translation>数据过期</translation>
    </message>
    <message>
        <source>unknown</source>
        <translation>未知</translation>
    </message>
    <message>
        <source>unreachable: {error}</source>
        <translation>不可达：{error}</translation>
    </message>
</context>
<context>
    <name>Tray</name>
    <message>
        <source>fleetmon: {status}</source>
        <translation>fleetmon：{status}</translation>
    </message>
    <message>
        <source>all clear</source>
        <translation>一切正常</translation>
    </message>
    <message>
        <source>fleetmon: new critical finding</source>
        <translation>fleetmon：新的严重问题</translation>
    </message>
</context>
<context>
    <name>Verdict</name>
    <message>
        <source>pass</source>
        <translation>通过</translation>
    </message>
    <message>
        <source>warn</source>
        <translation>警告</translation>
    </message>
    <message>
        <source>fail</source>
        <translation>不通过</translation>
    </message>
    <message>
        <source>unreachable</source>
        <translation>不可达</translation>
    </message>
    <message>
        <source>stale</source>
        <translation>数据过期</translation>
    </message>
    <message>
        <source>unknown</source>
        <translation>未知</translation>
    </message>
</context>
<context>
    <name>VersionsModel</name>
    <message>
        <source>(no group)</source>
        <translation>（无分组）</translation>
    </message>
    <message>
        <source>baseline</source>
        <translation>基线</translation>
    </message>
    <message>
        <source>outlier</source>
        <translation>不一致</translation>
    </message>
    <message>
        <source>no version reported</source>
        <translation>未上报版本</translation>
    </message>
</context>
<context>
    <name>VersionsView</name>
    <message>
        <source>★ marks the group&apos;s baseline (its expected version, else the majority); tinted cells have outliers. Click a cell for its nodes (listed below).</source>
        <translation>★ 标出分组的基线版本（指定的期望版本，否则为多数版本）；着色的单元格有不一致的节点。点击单元格在下方列出其节点。</translation>
    </message>
    <message>
        <source>Click a cell of the matrix to list the nodes behind each version; double-click a node to show it in the fleet view.</source>
        <translation>点击矩阵中的单元格，列出每个版本对应的节点；双击节点在集群视图中显示。</translation>
    </message>
</context>
<context>
    <name>app</name>
    <message>
        <source>fleetmon: no such database</source>
        <translation>fleetmon：数据库不存在</translation>
    </message>
    <message>
        <source>There is no database at
{path}

Create an empty fleetmon database there?</source>
        <translation>以下位置没有数据库：
{path}

在此创建一个空的 fleetmon 数据库吗？</translation>
    </message>
    <message>
        <source>Cannot open {path}:

{error}</source>
        <translation>无法打开 {path}：

{error}</translation>
    </message>
    <message>
        <source>Cannot open {path}: {error}</source>
        <translation>无法打开 {path}：{error}</translation>
    </message>
    <message>
        <source>collector: starting, every {interval} s</source>
        <translation>采集：启动中，每 {interval} 秒</translation>
    </message>
</context>
<context>
    <name>demo</name>
    <message>
        <source>Generating the demo fleet&apos;s history…</source>
        <translation>正在生成演示集群的历史数据…</translation>
    </message>
    <message>
        <source>Cancel</source>
        <translation>取消</translation>
    </message>
    <message>
        <source>fleetmon demo</source>
        <translation>fleetmon 演示</translation>
    </message>
</context>
</TS>
