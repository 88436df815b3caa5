"""Setup for the nanochat course package (nbdev 2 layout: metadata lives in settings.ini)."""
from configparser import ConfigParser
import setuptools, shlex

config = ConfigParser(delimiters=['='])
config.read('settings.ini', encoding='utf-8')
cfg = config['DEFAULT']

licenses = {'mit': 'MIT'}  # SPDX license expression
statuses = ['1 - Planning', '2 - Pre-Alpha', '3 - Alpha', '4 - Beta', '5 - Production/Stable']
requirements = shlex.split(cfg.get('requirements', ''))
dev_requirements = shlex.split(cfg.get('dev_requirements', ''))
lic = licenses[cfg['license']]

setuptools.setup(
    name=cfg['lib_name'],
    version=cfg['version'],
    description=cfg['description'],
    long_description=open('README.md', encoding='utf-8').read(),
    long_description_content_type='text/markdown',
    keywords=cfg['keywords'].split(),
    license=lic,
    author=cfg['author'],
    author_email=cfg['author_email'],
    url=cfg['git_url'],
    classifiers=['Development Status :: ' + statuses[int(cfg['status'])],
                 'Intended Audience :: ' + cfg['audience'].title(),
                 'Natural Language :: ' + cfg['language'].title(),
                 'Programming Language :: Python :: 3'],
    # nanochat/data holds no code, only the identity conversations: listed as a (namespace) package of data so
    # setuptools ships it without warning that an importable folder is missing from `packages`
    packages=setuptools.find_namespace_packages(include=['nanochat', 'nanochat.*'], exclude=['*__pycache__*']),
    include_package_data=True,
    package_data={'nanochat': ['ui.html'], 'nanochat.data': ['*.jsonl']},  # the chat page, the identity conversations
    install_requires=requirements,
    extras_require={'dev': dev_requirements, 'hf': ['tokenizers'], 'web': ['fastapi==0.165.0', 'uvicorn==0.54.0'],
                    'gpu': ['kernels']},  # gpu: Flash Attention 3 on Hopper (nanochat.flash_attention loads it lazily)
    python_requires='>=' + cfg['min_python'],
    zip_safe=False,
    entry_points={'console_scripts': cfg.get('console_scripts', '').split(), 'nbdev': [f"{cfg['lib_path']}={cfg['lib_path']}._modidx:d"]},
)
